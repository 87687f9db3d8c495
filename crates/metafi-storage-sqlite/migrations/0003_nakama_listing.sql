-- Nakama's storage listing order, (read, key, user_id) within a collection, served by an index.
CREATE INDEX storage_list_idx ON storage (collection, read, key, user_id);
