//! Authoritative matches: `match_create`, `match_get`, `match_list`, `match_signal`, over the
//! server's match host.
//!
//! Nakama's Lua and JavaScript argument errors differ (`expects label string or nil` /
//! `expects string`); each language gets its own.

use metafi_match::{ListQuery, MatchInfo};

use super::storage::ready;
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("match_create"),
        js: Some("matchCreate"),
        call: NkCall::Async(match_create),
    },
    NkFunction {
        lua: Some("match_get"),
        js: Some("matchGet"),
        call: NkCall::Async(match_get),
    },
    NkFunction {
        lua: Some("match_list"),
        js: Some("matchList"),
        call: NkCall::Async(match_list),
    },
    NkFunction {
        lua: Some("match_signal"),
        js: Some("matchSignal"),
        call: NkCall::Async(match_signal),
    },
];

fn match_create(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let module = args.at(1);
        let module = match module.value {
            NkValue::Str(s) if !s.is_empty() => s.clone(),
            NkValue::Str(_) => return Err(module.error("expects module name")),
            _ if js => return Err(module.error("expects string")),
            _ => return Err(module.error("expects module name")),
        };
        let params = args.at(2);
        let refused = || {
            params.error(if js {
                "expects params to be an object"
            } else {
                "expects params to be nil or a table of key-value pairs"
            })
        };
        let params = match params.value {
            NkValue::Nil => serde_json::Map::new(),
            value @ NkValue::Map(_) => match value.to_json(args.naming()) {
                Ok(serde_json::Value::Object(map)) => map,
                Ok(_) => return Err(refused()),
                Err(e) => return Err(params.error(format!("failed to convert params: {e}"))),
            },
            _ => return Err(refused()),
        };
        Ok((module, params))
    })();
    let (module, params) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let id = nk
            .match_create(&module, params)
            .await
            .map_err(|e| NkError::core("error creating match", e))?;
        Ok(id.into())
    })
}

fn match_get(nk: Nk, args: NkArgs) -> NkFuture {
    let id = match string(args.at(1), args.is_js()) {
        Ok(id) => id,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let found = nk
            .match_get(&id)
            .await
            .map_err(|e| NkError::core("failed to get match", e))?;
        Ok(found.as_ref().map(match_value).into())
    })
}

fn match_list(nk: Nk, args: NkArgs) -> NkFuture {
    let query = match list_query(&args) {
        Ok(query) => query,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let found = nk
            .match_list(query)
            .await
            .map_err(|e| NkError::core("failed to list matches", e))?;
        Ok(found.iter().map(match_value).collect::<Vec<_>>().into())
    })
}

fn list_query(args: &NkArgs) -> Result<ListQuery, NkError> {
    let js = args.is_js();
    // Lua numbers are truncated (gopher-lua); JavaScript wants integral numbers.
    let number = |arg: Arg<'_>, lua_message: &'static str| -> Result<Option<i64>, NkError> {
        match arg.value {
            NkValue::Nil => Ok(None),
            value if js => value
                .as_i64()
                .map(Some)
                .ok_or_else(|| arg.error("expects number")),
            value => value
                .as_f64()
                .map(|n| Some(n as i64))
                .ok_or_else(|| arg.error(lua_message)),
        }
    };
    let text = |arg: Arg<'_>, lua_message: &'static str| -> Result<Option<String>, NkError> {
        match arg.value {
            NkValue::Nil => Ok(None),
            NkValue::Str(s) => Ok(Some(s.clone())),
            _ => Err(arg.error(if js { "expects string" } else { lua_message })),
        }
    };
    let authoritative = match args.at(2).value {
        NkValue::Nil => None,
        NkValue::Bool(b) => Some(*b),
        _ => {
            return Err(args.at(2).error(if js {
                "expects boolean"
            } else {
                "expects authoritative true/false or nil"
            }));
        }
    };
    let clamp = |n: i64| i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX });
    Ok(ListQuery {
        limit: usize::try_from(
            number(args.at(1), "expects limit number or nil")?
                .unwrap_or(1)
                .max(0),
        )
        .unwrap_or(usize::MAX),
        authoritative,
        label: text(args.at(3), "expects label string or nil")?,
        min_size: number(args.at(4), "expects minimum size number or nil")?.map(clamp),
        max_size: number(args.at(5), "expects maximum size number or nil")?.map(clamp),
        query: text(args.at(6), "expects query string or nil")?,
    })
}

fn match_signal(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = string(args.at(1), js).and_then(|id| {
        let data = match args.at(2).value {
            NkValue::Str(s) => s.clone(),
            NkValue::Nil => String::new(),
            _ if js => return Err(args.at(2).error("expects string")),
            _ => String::new(),
        };
        Ok((id, data))
    });
    let (id, data) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let reply = nk
            .match_signal(&id, data)
            .await
            .map_err(|e| NkError::core("failed to signal match", e))?;
        Ok(reply.into())
    })
}

/// A required string argument: Lua's `string expected`, JavaScript's `expects string`.
fn string(arg: Arg<'_>, js: bool) -> Result<String, NkError> {
    arg.string(if js {
        "expects string"
    } else {
        "string expected"
    })
    .map(str::to_owned)
}

/// A match as listings show it: Nakama's fields plus `tick_rate` and `handler_name`.
fn match_value(info: &MatchInfo) -> NkValue {
    NkMap::with_capacity(6)
        .with("match_id", info.match_id.as_str())
        .with("authoritative", info.authoritative)
        .with("label", info.label.as_deref())
        .with("size", info.size)
        .with("tick_rate", info.tick_rate)
        .with("handler_name", info.handler_name.as_deref())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::Naming;

    #[test]
    fn list_filters_have_nakamas_defaults_and_errors() {
        let query = list_query(&NkArgs::new(Naming::Snake, Vec::new())).unwrap();
        assert_eq!(query.limit, 1, "Nakama's default limit");
        assert_eq!(query.authoritative, None);

        let lua = NkArgs::new(Naming::Snake, vec![10i64.into(), NkValue::Nil, 3i64.into()]);
        assert_eq!(
            list_query(&lua).unwrap_err().lua_message("match_list"),
            "bad argument #3 to match_list (expects label string or nil)"
        );
        let js = NkArgs::new(Naming::Camel, vec![1.5f64.into()]);
        assert_eq!(
            list_query(&js).unwrap_err(),
            NkError::Arg {
                position: 1,
                message: "expects number".into()
            }
        );
        let sizes = NkArgs::new(
            Naming::Snake,
            vec![
                5.9f64.into(),
                true.into(),
                NkValue::Nil,
                NkValue::Int(-1 << 40),
                NkValue::Int(8),
            ],
        );
        let query = list_query(&sizes).unwrap();
        assert_eq!(query.limit, 5, "Lua truncates");
        assert_eq!(query.min_size, Some(i32::MIN));
        assert_eq!(query.max_size, Some(8));
    }

    #[test]
    fn a_match_shows_absent_fields_as_nil() {
        let value = match_value(&MatchInfo {
            match_id: "m".into(),
            authoritative: false,
            label: None,
            size: 2,
            tick_rate: None,
            handler_name: None,
        });
        let json = value.to_json(Naming::Camel).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"matchId": "m", "authoritative": false, "label": null,
                "size": 2, "tickRate": null, "handlerName": null})
        );
    }
}
