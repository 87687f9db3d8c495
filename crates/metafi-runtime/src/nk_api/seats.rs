//! Seats reserved ahead of a join (MetaFi only; docs/MATCHES.md, "Seats"):
//! `match_find_seat(module, user_id, max_size, query?, params?) → match id` — the first match of
//! handler `module` passing `query` with fewer than `max_size` seats taken (joined, pending,
//! reserved) gets a seat reserved for `user_id`, else a new match (`params`) is created holding
//! it — and `match_reserve_seat(match_id, user_id, max_size) → bool` (JS: `matchFindSeat`,
//! `matchReserveSeat`). Listings count reserved seats in `size`; the user's join uses the seat.

use metafi_match::ListQuery;
use uuid::Uuid;

use super::storage::ready;
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("match_find_seat"),
        js: Some("matchFindSeat"),
        call: NkCall::Async(match_find_seat),
    },
    NkFunction {
        lua: Some("match_reserve_seat"),
        js: Some("matchReserveSeat"),
        call: NkCall::Async(match_reserve_seat),
    },
];

fn user_id(arg: Arg<'_>) -> Result<Uuid, NkError> {
    match arg.value {
        NkValue::Str(s) => Uuid::parse_str(s).map_err(|_| arg.error("expects a valid user ID")),
        _ => Err(arg.error("expects user ID string")),
    }
}

/// Seats of a match: a whole number from 1 to 1,000,000.
fn seats(arg: Arg<'_>) -> Result<u32, NkError> {
    let n = arg
        .value
        .as_f64()
        .ok_or_else(|| arg.error("expects max size number"))?;
    if n.fract() != 0.0 || !(1.0..=1_000_000.0).contains(&n) {
        return Err(arg.error("expects max size to be a whole number from 1 to 1000000"));
    }
    Ok(n as u32)
}

fn match_find_seat(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let module = args.at(1);
        let module = match module.value {
            NkValue::Str(s) if !s.is_empty() => s.clone(),
            _ => return Err(module.error("expects module name")),
        };
        let user = user_id(args.at(2))?;
        let seats = seats(args.at(3))?;
        let query = match args.at(4).value {
            NkValue::Nil => None,
            NkValue::Str(s) => Some(s.clone()),
            _ => return Err(args.at(4).error("expects query string or nil")),
        };
        let params = args.at(5);
        let params = match params.value {
            NkValue::Nil => serde_json::Map::new(),
            value @ NkValue::Map(_) => match value.to_json(args.naming()) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => return Err(params.error("expects params to be nil or an object")),
            },
            _ => return Err(params.error("expects params to be nil or an object")),
        };
        Ok((module, user, seats, query, params))
    })();
    let (module, user, seats, query, params) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let query = ListQuery {
            limit: 1,
            authoritative: Some(true),
            query,
            ..ListQuery::default()
        };
        let id = nk
            .match_find_seat(&module, params, query, user, seats)
            .await
            .map_err(|e| NkError::core("error finding a seat", e))?;
        Ok(id.into())
    })
}

fn match_reserve_seat(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let id = args.at(1);
        let id = match id.value {
            NkValue::Str(s) if !s.is_empty() => s.clone(),
            _ => return Err(id.error("expects match ID")),
        };
        Ok((id, user_id(args.at(2))?, seats(args.at(3))?))
    })();
    let (id, user, seats) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let reserved = nk
            .match_reserve_seat(&id, user, seats)
            .await
            .map_err(|e| NkError::core("error reserving a seat", e))?;
        Ok(reserved.into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::Naming;

    fn args(values: Vec<NkValue>) -> NkArgs {
        NkArgs::new(Naming::Snake, values)
    }

    #[test]
    fn sizes_are_whole_numbers_from_one() {
        let a = args(vec![
            NkValue::Int(10),
            1.5f64.into(),
            NkValue::Int(0),
            "x".into(),
        ]);
        assert_eq!(seats(a.at(1)).unwrap(), 10);
        for position in 2..=4 {
            let error = seats(a.at(position)).unwrap_err();
            assert!(
                error
                    .lua_message("match_find_seat")
                    .starts_with(&format!("bad argument #{position} to match_find_seat")),
                "{error:?}"
            );
        }
    }

    #[test]
    fn user_ids_must_be_uuids() {
        let id = Uuid::new_v4();
        let a = args(vec![id.to_string().into(), "nope".into(), NkValue::Int(1)]);
        assert_eq!(user_id(a.at(1)).unwrap(), id);
        assert_eq!(
            user_id(a.at(2))
                .unwrap_err()
                .lua_message("match_reserve_seat"),
            "bad argument #2 to match_reserve_seat (expects a valid user ID)"
        );
        assert_eq!(
            user_id(a.at(3))
                .unwrap_err()
                .lua_message("match_reserve_seat"),
            "bad argument #3 to match_reserve_seat (expects user ID string)"
        );
    }
}
