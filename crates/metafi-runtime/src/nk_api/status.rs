//! Status: `status_follow`, `status_unfollow` — a session hears (or stops hearing) about users
//! coming online, going offline and changing their status, as if its client had asked.

use std::collections::HashSet;

use uuid::Uuid;

use super::streams::realtime;
use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("status_follow"),
        js: Some("statusFollow"),
        call: NkCall::Sync(status_follow),
    },
    NkFunction {
        lua: Some("status_unfollow"),
        js: Some("statusUnfollow"),
        call: NkCall::Sync(status_unfollow),
    },
];

/// `(session_id, user_ids)`. Unlike a client's follow, no `status` answer is sent and unknown
/// users are followed too (Nakama's runtime does not check); the socket's
/// `socket.max_followed_users` still applies.
fn status_follow(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (session_id, user_ids) = follow_args(&args)?;
    if user_ids.is_empty() {
        return Ok(NkValue::Nil);
    }
    let host = realtime(nk, &args, "status_follow", "statusFollow")?;
    host.status_follow(session_id, &user_ids)
        .map_err(|e| NkError::core("failed to follow", e))?;
    Ok(NkValue::Nil)
}

/// `(session_id, user_ids)`.
fn status_unfollow(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (session_id, user_ids) = follow_args(&args)?;
    if user_ids.is_empty() {
        return Ok(NkValue::Nil);
    }
    let host = realtime(nk, &args, "status_unfollow", "statusUnfollow")?;
    host.status_unfollow(session_id, &user_ids);
    Ok(NkValue::Nil)
}

fn follow_args(args: &NkArgs) -> Result<(Uuid, Vec<Uuid>), NkError> {
    let js = args.is_js();
    let session = args.at(1);
    let session_id = session
        .value
        .as_str()
        .and_then(|text| Uuid::parse_str(text).ok())
        .ok_or_else(|| session.error("expects a valid session id"))?;
    let items = args.at(2).list(if js {
        "expects an array of user ids"
    } else {
        "invalid user ids list"
    })?;
    let mut user_ids = Vec::with_capacity(items.len());
    let mut seen = HashSet::with_capacity(items.len());
    for item in items {
        let id = match item.value.as_str() {
            Some(text) if !text.is_empty() || js => Uuid::parse_str(text).map_err(|_| {
                item.error(if js {
                    "expects a valid user id"
                } else {
                    "each user id must be a valid id"
                })
            })?,
            _ if js => return Err(item.error("expects an array of user ids")),
            _ => return Err(item.error("each user id must be a string")),
        };
        if seen.insert(id) {
            user_ids.push(id);
        }
    }
    Ok((session_id, user_ids))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use uuid::Uuid;

    use super::super::test_realtime::{Asked, Lang, call, harness, lua_error};
    use super::super::{NkError, NkValue};

    #[tokio::test]
    async fn follow_and_unfollow_pass_distinct_ids_and_refuse_bad_ones() {
        let h = harness(true).await;
        let (session, a, b) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let ids = NkValue::List(vec![
            a.to_string().into(),
            b.to_string().into(),
            a.to_string().into(),
        ]);
        call(
            &h.nk,
            Lang::Lua,
            "status_follow",
            vec![session.to_string().into(), ids.clone()],
        )
        .await
        .unwrap();
        call(
            &h.nk,
            Lang::Js,
            "statusUnfollow",
            vec![session.to_string().into(), ids],
        )
        .await
        .unwrap();
        call(
            &h.nk,
            Lang::Js,
            "statusFollow",
            vec![session.to_string().into(), NkValue::List(Vec::new())],
        )
        .await
        .unwrap();
        assert_eq!(
            h.realtime.asked(),
            vec![
                Asked::Follow(session, vec![a, b]),
                Asked::Unfollow(session, vec![a, b])
            ],
            "an empty list asks nothing"
        );
        assert_eq!(
            lua_error(
                call(
                    &h.nk,
                    Lang::Lua,
                    "status_follow",
                    vec!["x".into(), NkValue::List(Vec::new())]
                )
                .await,
                "status_follow"
            ),
            "bad argument #1 to status_follow (expects a valid session id)"
        );
        assert_eq!(
            lua_error(
                call(
                    &h.nk,
                    Lang::Lua,
                    "status_follow",
                    vec![
                        session.to_string().into(),
                        NkValue::List(vec![NkValue::Int(1)])
                    ]
                )
                .await,
                "status_follow"
            ),
            "bad argument #2 to status_follow (each user id must be a string)"
        );
        assert_eq!(
            call(
                &h.nk,
                Lang::Js,
                "statusFollow",
                vec![
                    session.to_string().into(),
                    NkValue::List(vec!["nope".into()])
                ]
            )
            .await,
            Err(NkError::Arg {
                position: 2,
                message: "expects a valid user id".into()
            })
        );
    }
}
