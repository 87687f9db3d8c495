-- "Log out everywhere": tokens of a user issued at or before issued_before (seconds, the JWT
-- iat) are refused until expires_at (ms), when the last of them has expired anyway.
CREATE TABLE user_revocation (
    user_id       uuid   NOT NULL PRIMARY KEY,
    issued_before bigint NOT NULL,
    expires_at    bigint NOT NULL
);
CREATE INDEX user_revocation_expires_at_idx ON user_revocation (expires_at);
