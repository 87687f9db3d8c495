-- Console user management, MFA and lasting sign-outs (docs/CONSOLE.md): each console user gets
-- an id and email (Nakama's `User`), MFA state (TOTP secret and recovery codes, both
-- AES-256-GCM encrypted by the console), whether MFA is required, an update time, and a
-- session key that every session token of the user carries: a new key (role change) or no row
-- (deletion) ends every session at once. Signed-out sessions are kept until they expire.
ALTER TABLE console_user ADD COLUMN id text NOT NULL DEFAULT '';
ALTER TABLE console_user ADD COLUMN email text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE console_user ADD COLUMN mfa_secret bytea;
ALTER TABLE console_user ADD COLUMN mfa_recovery_codes bytea;
ALTER TABLE console_user ADD COLUMN mfa_required boolean NOT NULL DEFAULT false;
ALTER TABLE console_user ADD COLUMN update_time bigint NOT NULL DEFAULT 0;
ALTER TABLE console_user ADD COLUMN session_key text NOT NULL DEFAULT '';

UPDATE console_user SET
    id = gen_random_uuid()::text,
    session_key = md5(random()::text || clock_timestamp()::text),
    update_time = create_time;

CREATE UNIQUE INDEX console_user_email ON console_user (email) WHERE email <> '';

CREATE TABLE console_session_revoked (
    session_id  text   COLLATE "C" NOT NULL PRIMARY KEY,
    expire_time bigint NOT NULL
);
CREATE INDEX console_session_revoked_expiry ON console_session_revoked (expire_time);
