-- Validated in-app purchases and subscriptions (Nakama's purchase and subscription tables).
-- Times are ms since the epoch; refund_time 0 = not refunded. A deleted user's rows stay,
-- without an owner, so a replayed receipt is still recognised.
CREATE TABLE purchase (
    transaction_id text    COLLATE "C" NOT NULL PRIMARY KEY CHECK (length(transaction_id) > 0),
    user_id        uuid    REFERENCES users (id) ON DELETE SET NULL,
    store          integer NOT NULL,
    product_id     text    NOT NULL,
    raw_response   text    NOT NULL DEFAULT '{}',
    purchase_time  bigint  NOT NULL,
    create_time    bigint  NOT NULL,
    update_time    bigint  NOT NULL,
    refund_time    bigint  NOT NULL DEFAULT 0,
    environment    integer NOT NULL DEFAULT 0
);
CREATE INDEX purchase_user_time_idx ON purchase (user_id, purchase_time DESC, transaction_id DESC);
CREATE INDEX purchase_time_idx ON purchase (purchase_time DESC, transaction_id DESC);

CREATE TABLE subscription (
    original_transaction_id text    COLLATE "C" NOT NULL PRIMARY KEY CHECK (length(original_transaction_id) > 0),
    user_id                 uuid    REFERENCES users (id) ON DELETE SET NULL,
    store                   integer NOT NULL,
    product_id              text    NOT NULL,
    raw_response            text    NOT NULL DEFAULT '{}',
    raw_notification        text    NOT NULL DEFAULT '{}',
    purchase_time           bigint  NOT NULL,
    create_time             bigint  NOT NULL,
    update_time             bigint  NOT NULL,
    expire_time             bigint  NOT NULL,
    refund_time             bigint  NOT NULL DEFAULT 0,
    environment             integer NOT NULL DEFAULT 0
);
CREATE INDEX subscription_user_time_idx
    ON subscription (user_id, purchase_time DESC, original_transaction_id DESC);
CREATE INDEX subscription_user_product_idx ON subscription (user_id, product_id);
CREATE INDEX subscription_time_idx ON subscription (purchase_time DESC, original_transaction_id DESC);
