-- Persistent notifications (Nakama's `notification` table). The key orders a user's
-- notifications for listing (`(create_time, id)` after a cursor); `id` is unique on its own
-- for lookups and deletes by id. Rows go with the account (ON DELETE CASCADE).
CREATE TABLE notification (
    user_id     BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    create_time INTEGER NOT NULL,
    id          BLOB    NOT NULL UNIQUE,
    subject     TEXT    NOT NULL,
    content     TEXT    NOT NULL DEFAULT '{}',
    code        INTEGER NOT NULL CHECK (code BETWEEN -32768 AND 32767),
    sender_id   BLOB    NOT NULL,
    PRIMARY KEY (user_id, create_time, id)
) WITHOUT ROWID;
