-- The console (docs/CONSOLE.md): its users, seeded from configuration at first start with
-- bcrypt password hashes, and the audit log of every change made through it.
CREATE TABLE console_user (
    username      text     COLLATE "C" NOT NULL PRIMARY KEY,
    password_hash text     NOT NULL,
    role          smallint NOT NULL CHECK (role BETWEEN 1 AND 4),
    create_time   bigint   NOT NULL
);

CREATE TABLE console_audit (
    id       bigserial PRIMARY KEY,
    time     bigint    NOT NULL,
    username text      NOT NULL,
    action   text      NOT NULL,
    target   text      NOT NULL,
    detail   text      NOT NULL
);
