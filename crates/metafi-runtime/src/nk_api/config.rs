//! `get_config()` (Lua): the server's configuration in Nakama's shape — `name`,
//! `shutdown_grace_sec`, `logger`, `session`, `socket`, `social`, `runtime`, `iap`,
//! `google_auth`, `satori` — built by the server (`metafi-server`, `modules.rs`).
//!
//! As in Nakama, server code is trusted and gets the keys it may need (session encryption
//! keys, server key, HTTP key) in clear; what Nakama leaves out (the database address) is not
//! there either. Sections for features MetaFi does not have carry Nakama's empty values.

use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("get_config"),
    js: None,
    call: NkCall::Sync(get_config),
}];

fn get_config(nk: &Nk, _: NkArgs) -> Result<NkValue, NkError> {
    match &nk.utilities().config.server_config {
        Some(config) => Ok(NkValue::from_json(config)),
        None => Err(NkError::failed(
            "failed to get config: the server gave the runtime no configuration",
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::nk_api::test_support::{lua, nk_with, on};
    use crate::nk_api::{Naming, UtilityConfig};

    #[tokio::test]
    async fn returns_what_the_server_gave() {
        let view = json!({"name": "node-a", "session": {"token_expiry_sec": 60}});
        let t = nk_with(UtilityConfig {
            server_config: Some(Arc::new(view.clone())),
            ..UtilityConfig::default()
        })
        .await;
        let config = on(&t.nk, Naming::Snake, "get_config", vec![])
            .await
            .unwrap();
        assert_eq!(config.to_json(Naming::Snake).unwrap(), view);
    }

    #[tokio::test]
    async fn without_one_the_call_says_so() {
        assert_eq!(
            lua("get_config", vec![]).await,
            Err(NkError::failed(
                "failed to get config: the server gave the runtime no configuration"
            ))
        );
    }
}
