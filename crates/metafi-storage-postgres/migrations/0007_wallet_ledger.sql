-- The wallet ledger: one row per recorded wallet change (Nakama's wallet_ledger). Listed per
-- user newest first; removed with the user. Changesets and metadata are JSON object text.
CREATE TABLE wallet_ledger (
    id          uuid   NOT NULL PRIMARY KEY,
    user_id     uuid   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    changeset   text   NOT NULL,
    metadata    text   NOT NULL DEFAULT '{}',
    create_time bigint NOT NULL,
    update_time bigint NOT NULL
);
CREATE INDEX wallet_ledger_user_time_idx ON wallet_ledger (user_id, create_time DESC, id DESC);
