//! Functions of features other issues build (`storage_write_retry`): rows that let
//! modules load and fail at call time
//! naming the feature. A feature that lands replaces its rows here with served ones.

use super::{NkCall, NkFunction, Unserved};

const fn later(lua: &'static str, js: &'static str, feature: &'static str) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Unserved(Unserved::Later { feature }),
    }
}

pub(super) const FUNCTIONS: &[NkFunction] = &[
    // storage_write_retry calls a script function back between attempts, which the binding
    // table cannot carry yet.
    later(
        "storage_write_retry",
        "storageWriteRetry",
        "storage_write_retry (a function taking a callback)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::camel_case;

    #[test]
    fn every_row_names_its_feature_and_the_js_name_is_nakamas() {
        assert_eq!(
            FUNCTIONS.len(),
            1,
            "Nakama's not-yet-served social/economy functions"
        );
        for row in FUNCTIONS {
            let (Some(lua), Some(js)) = (row.lua, row.js) else {
                panic!("{row:?} lacks a name");
            };
            assert_eq!(camel_case(lua), js, "{lua}");
            let NkCall::Unserved(why) = row.call else {
                panic!("{lua} is served");
            };
            let message = why.error(js).lua_message(js);
            assert!(
                message.starts_with(&format!(
                    "nk.{js} is not available yet: this server does not serve "
                )),
                "{message}"
            );
        }
    }
}
