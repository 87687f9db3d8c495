-- Nakama's storage listing order, (read, key, user_id) within a collection, served by indexes.
CREATE INDEX storage_list_idx ON storage (collection, read, key, user_id);
-- An owner's listing (collection and user_id fixed) walks this one in (read, key) order.
CREATE INDEX storage_owner_list_idx ON storage (collection, user_id, read, key);
