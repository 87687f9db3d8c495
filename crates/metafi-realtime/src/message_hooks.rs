//! Before and after hooks on client messages, with Nakama's semantics (`server/pipeline.go`):
//! the before hook sees the envelope (proto field names) and may change it; its error is sent
//! as a `RUNTIME_FUNCTION_EXCEPTION` error and the session stays open; returning nothing drops
//! the message with `UNRECOGNIZED_PAYLOAD` "Requested resource was not found." and closes the
//! session. The after hook runs once the message was served without an error, with the reply
//! (when the message has a `cid` and was answered) and the envelope; it cannot change anything.
//! RPC messages have no hooks, as in Nakama.

use std::sync::Arc;

use metafi_core::{Hook, HookValue};
use metafi_proto::realtime::{Envelope, ErrorCode, Message};

use crate::client_requests::Flow;
use crate::{CloseReason, Realtime, Session};

/// The hook of a client message, if Nakama runs hooks on it.
pub(crate) fn hook_of(message: &Message) -> Option<Hook> {
    Some(match message {
        Message::ChannelJoin(_) => Hook::ChannelJoin,
        Message::ChannelLeave(_) => Hook::ChannelLeave,
        Message::ChannelMessageSend(_) => Hook::ChannelMessageSend,
        Message::ChannelMessageUpdate(_) => Hook::ChannelMessageUpdate,
        Message::ChannelMessageRemove(_) => Hook::ChannelMessageRemove,
        Message::MatchCreate(_) => Hook::MatchCreate,
        Message::MatchDataSend(_) => Hook::MatchDataSend,
        Message::MatchJoin(_) => Hook::MatchJoin,
        Message::MatchLeave(_) => Hook::MatchLeave,
        Message::MatchmakerAdd(_) => Hook::MatchmakerAdd,
        Message::MatchmakerRemove(_) => Hook::MatchmakerRemove,
        Message::PartyCreate(_) => Hook::PartyCreate,
        Message::PartyJoin(_) => Hook::PartyJoin,
        Message::PartyLeave(_) => Hook::PartyLeave,
        Message::PartyPromote(_) => Hook::PartyPromote,
        Message::PartyAccept(_) => Hook::PartyAccept,
        Message::PartyRemove(_) => Hook::PartyRemove,
        Message::PartyClose(_) => Hook::PartyClose,
        Message::PartyJoinRequestList(_) => Hook::PartyJoinRequestList,
        Message::PartyMatchmakerAdd(_) => Hook::PartyMatchmakerAdd,
        Message::PartyMatchmakerRemove(_) => Hook::PartyMatchmakerRemove,
        Message::PartyDataSend(_) => Hook::PartyDataSend,
        Message::PartyUpdate(_) => Hook::PartyUpdate,
        Message::Ping(_) => Hook::Ping,
        Message::Pong(_) => Hook::Pong,
        Message::StatusFollow(_) => Hook::StatusFollow,
        Message::StatusUnfollow(_) => Hook::StatusUnfollow,
        Message::StatusUpdate(_) => Hook::StatusUpdate,
        _ => return None,
    })
}

impl Realtime {
    /// Serves a message that has a before or an after hook.
    pub(crate) async fn handle_hooked(
        &self,
        session: &Arc<Session>,
        cid: String,
        message: Message,
        hook: Hook,
    ) -> Flow {
        let mut envelope = Envelope::new(cid, message);
        // One trace id for the message's two hooks, as Nakama makes one per message.
        let trace_id = metafi_core::new_trace_id();
        if self.hooks.has_before(hook) {
            let cid = envelope.cid.clone();
            // The envelope itself goes to the hook: an engine serializes it straight into its
            // values; what the hook returns replaces it.
            let input = HookValue::message(envelope);
            match self
                .hooks
                .before_value(hook, session.rpc_context(trace_id), Some(input))
                .await
            {
                Err(error) => {
                    // Errors from before hooks do not close the session.
                    return failed(session, cid, &error.client_message());
                }
                Ok(None) => {
                    tracing::warn!(resource = hook.name(), sid = %session.id(), "Intercepted a disabled resource.");
                    session.send(&Envelope::error(
                        cid,
                        ErrorCode::UnrecognizedPayload,
                        "Requested resource was not found.",
                    ));
                    return Err(CloseReason::UnrecognizedMessage);
                }
                Ok(Some(changed)) => match changed.into_message::<Envelope>(hook) {
                    Ok(changed) if changed.message.is_some() => envelope = changed,
                    Ok(_) => {
                        tracing::warn!(
                            hook = hook.name(),
                            "a before hook returned an envelope without a message"
                        );
                        return failed(session, cid, "Could not complete runtime Before function.");
                    }
                    Err(error) => return failed(session, cid, &error.client_message()),
                },
            }
        }
        let Envelope { cid, message } = envelope;
        let Some(message) = message else {
            return Ok(());
        };
        if !self.hooks.has_after(hook) {
            return self.dispatch(session, cid, message).await;
        }
        let input = HookValue::message(Envelope::new(cid.clone(), message.clone()));
        let answered = !cid.is_empty();
        if answered {
            session.capture_reply(&cid);
        }
        let flow = self.dispatch(session, cid, message).await;
        let reply = if answered { session.take_reply() } else { None };
        let failed = matches!(
            &reply,
            Some(Envelope {
                message: Some(Message::Error(_)),
                ..
            })
        );
        // Unsuccessful operations do not trigger after hooks.
        if flow.is_ok() && !failed {
            let output = reply.map(HookValue::message);
            self.hooks
                .after_value(hook, session.rpc_context(trace_id), output, Some(input))
                .await;
        }
        flow
    }
}

fn failed(session: &Session, cid: String, message: &str) -> Flow {
    session.send(&Envelope::error(
        cid,
        ErrorCode::RuntimeFunctionException,
        message,
    ));
    Ok(())
}
