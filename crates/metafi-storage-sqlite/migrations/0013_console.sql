-- The console (docs/CONSOLE.md): its users, seeded from configuration at first start with
-- bcrypt password hashes, and the audit log of every change made through it.
CREATE TABLE console_user (
    username      TEXT    NOT NULL PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    role          INTEGER NOT NULL CHECK (role BETWEEN 1 AND 4),
    create_time   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE console_audit (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    time     INTEGER NOT NULL,
    username TEXT    NOT NULL,
    action   TEXT    NOT NULL,
    target   TEXT    NOT NULL,
    detail   TEXT    NOT NULL
);
