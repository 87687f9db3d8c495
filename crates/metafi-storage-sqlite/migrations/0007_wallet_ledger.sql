-- The wallet ledger: one row per recorded wallet change (Nakama's wallet_ledger). Listed per
-- user newest first; removed with the user.
CREATE TABLE wallet_ledger (
    id          BLOB    NOT NULL PRIMARY KEY,
    user_id     BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    changeset   TEXT    NOT NULL,
    metadata    TEXT    NOT NULL DEFAULT '{}',
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX wallet_ledger_user_time_idx ON wallet_ledger (user_id, create_time DESC, id DESC);
