//! Functions of features other issues build: rows that let modules load and fail at call time
//! naming the feature. A feature that lands replaces its rows here with served ones.

use super::{NkCall, NkFunction, Unserved};

const fn later(lua: &'static str, js: &'static str, feature: &'static str) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Unserved(Unserved::Later { feature }),
    }
}

// Every function of Nakama 3.40 that a later feature was to serve is served now; a new one
// goes here until its feature lands.
pub(super) const FUNCTIONS: &[NkFunction] = &[];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::camel_case;

    #[test]
    fn every_row_names_its_feature_and_the_js_name_is_nakamas() {
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
