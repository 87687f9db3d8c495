-- Console user management, MFA and lasting sign-outs (docs/CONSOLE.md): each console user gets
-- an id and email (Nakama's `User`), MFA state (TOTP secret and recovery codes, both
-- AES-256-GCM encrypted by the console), whether MFA is required, an update time, and a
-- session key that every session token of the user carries: a new key (role change) or no row
-- (deletion) ends every session at once. Signed-out sessions are kept until they expire.
ALTER TABLE console_user ADD COLUMN id TEXT NOT NULL DEFAULT '';
ALTER TABLE console_user ADD COLUMN email TEXT NOT NULL DEFAULT '';
ALTER TABLE console_user ADD COLUMN mfa_secret BLOB;
ALTER TABLE console_user ADD COLUMN mfa_recovery_codes BLOB;
ALTER TABLE console_user ADD COLUMN mfa_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE console_user ADD COLUMN update_time INTEGER NOT NULL DEFAULT 0;
ALTER TABLE console_user ADD COLUMN session_key TEXT NOT NULL DEFAULT '';

-- Users seeded before this migration: a random v4 id, a session key, the update time.
UPDATE console_user SET
    id = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
               substr(hex(randomblob(2)), 2) || '-' ||
               substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) ||
               '-' || hex(randomblob(6))),
    session_key = lower(hex(randomblob(16))),
    update_time = create_time;

CREATE UNIQUE INDEX console_user_email ON console_user (email) WHERE email <> '';

CREATE TABLE console_session_revoked (
    session_id  TEXT    NOT NULL PRIMARY KEY,
    expire_time INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX console_session_revoked_expiry ON console_session_revoked (expire_time);
