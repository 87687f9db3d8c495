-- Persistent notifications (Nakama's `notification` table). The key orders a user's
-- notifications for listing (`(create_time, id)` after a cursor); `id` is unique on its own
-- for lookups and deletes by id. Rows go with the account (ON DELETE CASCADE). `code` is
-- Nakama's SMALLINT; `content` text (not jsonb), as objects and messages here.
CREATE TABLE notification (
    user_id     uuid     NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    create_time bigint   NOT NULL,
    id          uuid     NOT NULL CONSTRAINT notification_id_key UNIQUE,
    subject     text     NOT NULL,
    content     text     NOT NULL DEFAULT '{}',
    code        smallint NOT NULL,
    sender_id   uuid     NOT NULL,
    PRIMARY KEY (user_id, create_time, id)
);
