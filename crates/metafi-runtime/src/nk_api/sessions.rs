//! Sessions: `session_disconnect`. (`session_logout` belongs with accounts and tokens.)

use metafi_match::PresenceReason;

use super::streams::realtime;
use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("session_disconnect"),
    js: Some("sessionDisconnect"),
    call: NkCall::Sync(session_disconnect),
}];

/// `(session_id, reason = none)`: closes the session's socket ("server-side session
/// disconnect"); `reason` (0–4, Nakama's presence reasons; 0 is none) is the leave reason its
/// matches see, `Disconnect` by default. An unknown session is no error, as in Nakama.
fn session_disconnect(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    let session_id = match arg.value.as_str() {
        None | Some("") => {
            return Err(arg.error(if js {
                "expects a session id"
            } else {
                "expects session id"
            }));
        }
        Some(text) => uuid::Uuid::parse_str(text).map_err(|_| {
            arg.error(if js {
                "expects a valid session id"
            } else {
                "expects valid session id"
            })
        })?,
    };
    let reason_arg = args.at(2);
    let reason = match reason_arg.opt_integer("expects reason to be a number")? {
        None | Some(0) => None,
        Some(1) => Some(PresenceReason::Join),
        Some(2) => Some(PresenceReason::Update),
        Some(3) => Some(PresenceReason::Leave),
        Some(4) => Some(PresenceReason::Disconnect),
        Some(_) => {
            return Err(reason_arg.error("invalid disconnect reason, must be a value 0-4"));
        }
    };
    let host = realtime(nk, &args, "session_disconnect", "sessionDisconnect")?;
    host.session_disconnect(session_id, reason);
    Ok(NkValue::Nil)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use metafi_match::PresenceReason;
    use uuid::Uuid;

    use super::super::test_realtime::{Asked, Lang, call, harness, lua_error};
    use super::super::{NkError, NkValue};

    #[tokio::test]
    async fn disconnect_passes_the_reason_and_checks_it_is_nakamas() {
        let h = harness(true).await;
        let session = Uuid::new_v4();
        let id = || NkValue::from(session.to_string());
        call(&h.nk, Lang::Lua, "session_disconnect", vec![id()])
            .await
            .unwrap();
        call(
            &h.nk,
            Lang::Lua,
            "session_disconnect",
            vec![id(), NkValue::Int(0)],
        )
        .await
        .unwrap();
        call(
            &h.nk,
            Lang::Js,
            "sessionDisconnect",
            vec![id(), NkValue::Int(3)],
        )
        .await
        .unwrap();
        assert_eq!(
            h.realtime.asked(),
            vec![
                Asked::Disconnect(session, None),
                Asked::Disconnect(session, None),
                Asked::Disconnect(session, Some(PresenceReason::Leave)),
            ]
        );
        assert_eq!(
            lua_error(
                call(
                    &h.nk,
                    Lang::Lua,
                    "session_disconnect",
                    vec![id(), NkValue::Int(5)]
                )
                .await,
                "session_disconnect"
            ),
            "bad argument #2 to session_disconnect (invalid disconnect reason, must be a value 0-4)"
        );
        assert_eq!(
            lua_error(
                call(&h.nk, Lang::Lua, "session_disconnect", vec!["x".into()]).await,
                "session_disconnect"
            ),
            "bad argument #1 to session_disconnect (expects valid session id)"
        );
        assert_eq!(
            call(&h.nk, Lang::Js, "sessionDisconnect", vec![NkValue::Nil]).await,
            Err(NkError::Arg {
                position: 1,
                message: "expects a session id".into()
            })
        );
    }
}
