-- Validated in-app purchases and subscriptions (Nakama's purchase and subscription tables).
-- Times are ms since the epoch; refund_time 0 = not refunded. A deleted user's rows stay,
-- without an owner, so a replayed receipt is still recognised.
CREATE TABLE purchase (
    transaction_id TEXT    NOT NULL PRIMARY KEY CHECK (length(transaction_id) > 0),
    user_id        BLOB    REFERENCES users (id) ON DELETE SET NULL,
    store          INTEGER NOT NULL,
    product_id     TEXT    NOT NULL,
    raw_response   TEXT    NOT NULL DEFAULT '{}',
    purchase_time  INTEGER NOT NULL,
    create_time    INTEGER NOT NULL,
    update_time    INTEGER NOT NULL,
    refund_time    INTEGER NOT NULL DEFAULT 0,
    environment    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX purchase_user_time_idx ON purchase (user_id, purchase_time DESC, transaction_id DESC);
CREATE INDEX purchase_time_idx ON purchase (purchase_time DESC, transaction_id DESC);

CREATE TABLE subscription (
    original_transaction_id TEXT    NOT NULL PRIMARY KEY CHECK (length(original_transaction_id) > 0),
    user_id                 BLOB    REFERENCES users (id) ON DELETE SET NULL,
    store                   INTEGER NOT NULL,
    product_id              TEXT    NOT NULL,
    raw_response            TEXT    NOT NULL DEFAULT '{}',
    raw_notification        TEXT    NOT NULL DEFAULT '{}',
    purchase_time           INTEGER NOT NULL,
    create_time             INTEGER NOT NULL,
    update_time             INTEGER NOT NULL,
    expire_time             INTEGER NOT NULL,
    refund_time             INTEGER NOT NULL DEFAULT 0,
    environment             INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX subscription_user_time_idx
    ON subscription (user_id, purchase_time DESC, original_transaction_id DESC);
CREATE INDEX subscription_user_product_idx ON subscription (user_id, product_id);
CREATE INDEX subscription_time_idx ON subscription (purchase_time DESC, original_transaction_id DESC);
