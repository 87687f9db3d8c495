//! Functions MetaFi will not serve: raw SQL and Satori. They exist so modules load, and fail at
//! call time saying what to use instead.

use super::{NkCall, NkFunction, Unserved};

const SQL: Unserved = Unserved::Never {
    why: "there is no raw SQL access (the database may be SQLite or PostgreSQL); use the storage_* functions or a native Rust module",
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
        let Err(NkError::Failed { message }) = js("getSatori", vec![]).await else {
            panic!("getSatori must fail")
        };
        assert!(
            message.starts_with("nk.getSatori is not supported by MetaFi"),
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
        assert_eq!(FUNCTIONS.len(), 3);
    }
}
