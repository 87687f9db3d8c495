-- MetaFi schema v1 (SQLite). UUIDs are 16-byte blobs, times are ms since the epoch.

CREATE TABLE users (
    id           BLOB    NOT NULL PRIMARY KEY,
    username     TEXT    NOT NULL UNIQUE,
    display_name TEXT    NOT NULL DEFAULT '',
    avatar_url   TEXT    NOT NULL DEFAULT '',
    lang_tag     TEXT    NOT NULL DEFAULT 'en',
    location     TEXT    NOT NULL DEFAULT '',
    timezone     TEXT    NOT NULL DEFAULT '',
    metadata     TEXT    NOT NULL DEFAULT '{}',
    wallet       TEXT    NOT NULL DEFAULT '{}',
    email        TEXT,
    password     TEXT,
    custom_id    TEXT,
    create_time  INTEGER NOT NULL,
    update_time  INTEGER NOT NULL,
    verify_time  INTEGER,
    disable_time INTEGER
) WITHOUT ROWID;
-- Partial: most users have neither, and a NULL entry would cost every sign-up an index write.
CREATE UNIQUE INDEX users_email_key ON users (email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_custom_id_key ON users (custom_id) WHERE custom_id IS NOT NULL;

CREATE TABLE user_device (
    id      TEXT NOT NULL PRIMARY KEY,
    user_id BLOB NOT NULL REFERENCES users (id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX user_device_user_id_idx ON user_device (user_id, id);

CREATE TABLE session_revocation (
    session_id BLOB    NOT NULL PRIMARY KEY,
    user_id    BLOB    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX session_revocation_expires_at_idx ON session_revocation (expires_at);

-- Keyed (collection, key, user_id); the primary key's column order serves the listing order
-- (user_id, key) within a collection. System objects have the nil UUID as owner.
CREATE TABLE storage (
    collection  TEXT    NOT NULL,
    user_id     BLOB    NOT NULL,
    key         TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    version     TEXT    NOT NULL,
    read        INTEGER NOT NULL CHECK (read BETWEEN 0 AND 2),
    write       INTEGER NOT NULL CHECK (write BETWEEN 0 AND 1),
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL,
    PRIMARY KEY (collection, user_id, key)
) WITHOUT ROWID;
CREATE INDEX storage_user_id_idx ON storage (user_id);

CREATE TABLE message (
    id          BLOB    NOT NULL PRIMARY KEY,
    channel_id  TEXT    NOT NULL,
    code        INTEGER NOT NULL,
    sender_id   BLOB    NOT NULL,
    username    TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX message_channel_time_idx ON message (channel_id, create_time, id);
