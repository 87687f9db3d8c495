//! Functions MetaFi will not serve: raw SQL, store purchase and subscription validation,
//! Satori. They exist so modules load, and fail at call time saying what to use instead.

use super::{NkCall, NkFunction, Unserved};

const SQL: Unserved = Unserved::Never {
    why: "there is no raw SQL access (the database may be SQLite or PostgreSQL); use the storage_* functions or a native Rust module",
};
const PURCHASES: Unserved = Unserved::Never {
    why: "in-app purchase validation against store servers is not offered; validate receipts in a native Rust module or an external service and record them with storage_write",
};
const SUBSCRIPTIONS: Unserved = Unserved::Never {
    why: "in-app subscription validation against store servers is not offered; validate in a native Rust module or an external service and record results with storage_write",
};
const SATORI: Unserved = Unserved::Never {
    why: "there is no Satori integration; call Satori's API with http_request",
};

const fn row(lua: &'static str, js: &'static str, why: Unserved) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Unserved(why),
    }
}

pub(super) const FUNCTIONS: &[NkFunction] = &[
    row("sql_exec", "sqlExec", SQL),
    row("sql_query", "sqlQuery", SQL),
    row(
        "purchase_validate_apple",
        "purchaseValidateApple",
        PURCHASES,
    ),
    row(
        "purchase_validate_google",
        "purchaseValidateGoogle",
        PURCHASES,
    ),
    row(
        "purchase_validate_huawei",
        "purchaseValidateHuawei",
        PURCHASES,
    ),
    row(
        "purchase_validate_facebook_instant",
        "purchaseValidateFacebookInstant",
        PURCHASES,
    ),
    row(
        "purchase_validate_samsung",
        "purchaseValidateSamsung",
        PURCHASES,
    ),
    row(
        "purchase_get_by_transaction_id",
        "purchaseGetByTransactionId",
        PURCHASES,
    ),
    row("purchases_list", "purchasesList", PURCHASES),
    row(
        "subscription_validate_apple",
        "subscriptionValidateApple",
        SUBSCRIPTIONS,
    ),
    row(
        "subscription_validate_google",
        "subscriptionValidateGoogle",
        SUBSCRIPTIONS,
    ),
    row(
        "subscription_get_by_product_id",
        "subscriptionGetByProductId",
        SUBSCRIPTIONS,
    ),
    row("subscriptions_list", "subscriptionsList", SUBSCRIPTIONS),
    row("get_satori", "getSatori", SATORI),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::NkError;
    use crate::nk_api::test_support::{js, lua};

    #[tokio::test]
    async fn calls_fail_naming_the_function_and_what_to_use() {
        let Err(NkError::Failed { message }) = lua("sql_exec", vec!["SELECT 1".into()]).await
        else {
            panic!("sql_exec must fail")
        };
        assert!(
            message.starts_with("nk.sql_exec is not supported by MetaFi: there is no raw SQL"),
            "{message}"
        );
        assert!(message.contains("storage_*"), "{message}");
        let Err(NkError::Failed { message }) = js("purchaseValidateApple", vec![]).await else {
            panic!("purchaseValidateApple must fail")
        };
        assert!(
            message.starts_with("nk.purchaseValidateApple is not supported by MetaFi"),
            "{message}"
        );
    }

    #[test]
    fn every_row_is_unserved() {
        assert!(
            FUNCTIONS
                .iter()
                .all(|f| matches!(f.call, NkCall::Unserved(Unserved::Never { .. })))
        );
        assert_eq!(FUNCTIONS.len(), 14);
    }
}
