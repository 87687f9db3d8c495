//! Example native modules, compiled into the `metafi` binary when it is built with its
//! `examples` feature (tests, benchmarks; a plain release build has none of them): MetaFi's
//! equivalent of a Nakama Go plugin, without the plugin (a crate the server links and
//! registers).
//!
//! [`Examples`] registers `echo_native`, the seed benchmark's native echo: decode the payload
//! as JSON and encode it back; a payload that is not JSON is code 3 (INVALID_ARGUMENT) with the
//! message [`NOT_JSON`], the same answer as the Lua and JavaScript echoes. It also
//! registers the seed benchmark's match as a native handler ([`seed_match::SeedMatch`], handler
//! name `seed_native`) and its `get_match_native` RPC, and the transport experiment's server
//! module ([`transport_seed`]: handler `transport_seed`, RPCs `transport_seed_create` and
//! `transport_seed_stats`), an event processor with its `event_log_native` RPC
//! ([`event_log`]), and, when `runtime.env` has `native_hooks=on`, example before/after
//! hooks ([`device_hooks`]), and the ESL consolidation benchmark's match ([`esl_match`]: handler
//! `esl_native`, RPC `esl_create_native`).
//!
//! Must not depend on: the server, the transport, a storage backend. Key type: [`Examples`].

pub mod device_hooks;
pub mod esl_match;
pub mod event_log;
pub mod seed_match;
pub mod transport_seed;

use std::sync::Arc;

use metafi_runtime::native::InitError;
use metafi_runtime::{CallContext, NativeInitializer, NativeModule, Nk, RpcError};

/// The example module.
#[derive(Debug, Default)]
pub struct Examples;

impl NativeModule for Examples {
    fn name(&self) -> &'static str {
        "examples"
    }

    fn init(&self, initializer: &mut NativeInitializer) -> Result<(), InitError> {
        initializer.register_rpc("echo_native", echo);
        initializer.register_rpc("get_match_native", seed_match::get_match);
        initializer.register_rpc("get_match_native_plain", seed_match::get_match_plain);
        initializer.register_match(seed_match::HANDLER, || {
            Box::new(seed_match::SeedMatch::default())
        });
        initializer.register_rpc("esl_create_native", esl_match::create);
        initializer.register_match(esl_match::HANDLER, || {
            Box::new(esl_match::EslMatch::default())
        });
        initializer.register_rpc("transport_seed_create", transport_seed::create);
        initializer.register_rpc("transport_seed_stats", transport_seed::stats);
        initializer.register_match(transport_seed::HANDLER, || {
            Box::new(transport_seed::TransportSeed::default())
        });
        device_hooks::register(initializer);
        event_log::register(initializer);
        Ok(())
    }
}

/// `echo_native`: the payload's JSON, decoded and encoded again (keys sorted, as Go's
/// `encoding/json` and the Lua echo produce them).
pub async fn echo(_ctx: Arc<CallContext>, _nk: Nk, payload: String) -> Result<String, RpcError> {
    echo_json(&payload)
}

/// What every example echo (Lua, JavaScript, native) answers for a payload that is not JSON:
/// a fixed text, so that no engine's parser wording tells a client which one answered.
pub const NOT_JSON: &str = "payload is not valid JSON";

/// The echo itself: JSON in, the same JSON out (re-encoded).
pub fn echo_json(payload: &str) -> Result<String, RpcError> {
    let value: serde_json::Value =
        serde_json::from_str(payload).map_err(|_| RpcError::invalid_argument(NOT_JSON))?;
    serde_json::to_string(&value)
        .map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use metafi_proto::Code;

    #[test]
    fn echo_re_encodes_json_with_sorted_keys() {
        assert_eq!(
            echo_json(r#"{"b":1, "a":[true,null]}"#).unwrap(),
            r#"{"a":[true,null],"b":1}"#
        );
    }

    #[test]
    fn echo_refuses_bad_json_with_code_3() {
        let error = echo_json("{nope").unwrap_err();
        assert_eq!(error.code, Code::InvalidArgument);
        assert_eq!(error.message, NOT_JSON);
        assert_eq!(echo_json("").unwrap_err().code, Code::InvalidArgument);
    }
}
