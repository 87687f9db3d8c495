//! Served worlds (MetaFi only; docs/WORLD.md, "Serving the world"): `world_create` (Lua,
//! native) / `worldCreate` (JS) `(map, options?) → match id`.

use super::storage::ready;
use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("world_create"),
    js: Some("worldCreate"),
    call: NkCall::Async(world_create),
}];

fn world_create(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let map = args.at(1);
        let map = match map.value {
            NkValue::Str(s) if !s.is_empty() => s.clone(),
            _ => return Err(map.error("expects map name")),
        };
        let options = args.at(2);
        let refused = || options.error("expects options to be nil or an object");
        let options = match options.value {
            NkValue::Nil => serde_json::Map::new(),
            value @ NkValue::Map(_) => match value.to_json(args.naming()) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => return Err(refused()),
            },
            _ => return Err(refused()),
        };
        Ok((map, options))
    })();
    let (map, options) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let Some(worlds) = nk.worlds() else {
            return Err(NkError::failed(
                "error creating world: this server serves no worlds",
            ));
        };
        let id = worlds
            .create_world(map, options)
            .await
            .map_err(|e| NkError::failed(format!("error creating world: {e}")))?;
        Ok(id.into())
    })
}
