//! The seed benchmark's authoritative match as a native handler, and `get_match_native`, the
//! RPC that finds one with a free seat (or creates one) and reserves the seat for the caller.
//!
//! 10 ticks per second, at most 10 players, counting joins accepted but not yet completed
//! (`MatchContext::pending_joins`) and seats reserved through `nk.match_signal(id, user_id)`,
//! so a join race admits exactly 10 and a player sent to a match finds its seat free. Op code 1
//! is echoed to its sender, op code 2 broadcast to every player. The label says whether there is
//! room.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use metafi_match::{
    Dispatcher, Flow, HandlerError, JoinRequest, JoinVerdict, ListQuery, MatchContext,
    MatchHandler, MatchInit, MatchMessage, Params, Presence, PresenceReason,
};
use metafi_runtime::{CallContext, Nk, RpcError};
use uuid::Uuid;

/// The handler name `nk.match_create` uses.
pub const HANDLER: &str = "seed_native";
const TICK_RATE: u32 = 10;
const MAX_PLAYERS: usize = 10;
/// A reserved seat is kept this many ticks (10 s) for its player to join.
const RESERVATION_TICKS: i64 = 10 * TICK_RATE as i64;

/// Echo on op code 1, broadcast on op code 2, seats reserved by signal.
#[derive(Debug)]
pub struct SeedMatch {
    players: HashSet<Uuid>,
    /// User id → tick its reservation lapses.
    reserved: HashMap<String, i64>,
    open: bool,
}

impl Default for SeedMatch {
    fn default() -> Self {
        SeedMatch {
            players: HashSet::new(),
            reserved: HashMap::new(),
            open: true,
        }
    }
}

fn label(open: bool) -> String {
    format!(r#"{{"kind":"seed","open":{}}}"#, u8::from(open))
}

fn dispatch_error(e: metafi_match::DispatchError) -> HandlerError {
    HandlerError::failed(e.to_string())
}

impl SeedMatch {
    fn taken(&self, ctx: &MatchContext) -> usize {
        self.players.len() + ctx.pending_joins + self.reserved.len()
    }

    fn update_label(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
    ) -> Result<(), HandlerError> {
        let open = self.taken(ctx) < MAX_PLAYERS;
        if open != self.open {
            self.open = open;
            d.update_label(&label(open)).map_err(dispatch_error)?;
        }
        Ok(())
    }
}

impl MatchHandler for SeedMatch {
    fn init(&mut self, _ctx: &MatchContext, _params: &Params) -> Result<MatchInit, HandlerError> {
        Ok(MatchInit {
            tick_rate: TICK_RATE,
            label: label(true),
        })
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        // A reservation becomes the pending join.
        let reserved = self
            .reserved
            .remove(&request.presence.user_id.to_string())
            .is_some();
        let allow = reserved || self.taken(ctx) < MAX_PLAYERS;
        Ok(JoinVerdict {
            flow: Flow::Continue,
            allow,
            reason: (!allow).then(|| "match full".to_owned()),
        })
    }

    fn join(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        self.players.extend(presences.iter().map(|p| p.session_id));
        self.update_label(ctx, d)?;
        Ok(Flow::Continue)
    }

    fn leave(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
        _reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        for p in presences {
            self.players.remove(&p.session_id);
        }
        self.update_label(ctx, d)?;
        Ok(Flow::Continue)
    }

    fn tick(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        for m in messages {
            match m.op_code {
                1 => d.broadcast(
                    1,
                    &m.data,
                    Some(std::slice::from_ref(&m.sender.session_id)),
                    Some(&m.sender),
                    true,
                ),
                2 => d.broadcast(2, &m.data, None, Some(&m.sender), true),
                _ => {}
            }
        }
        if !self.reserved.is_empty() {
            self.reserved.retain(|_, expires| tick < *expires);
            self.update_label(ctx, d)?;
        }
        Ok(Flow::Continue)
    }

    fn terminate(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        Ok(Flow::Continue)
    }

    /// `nk.match_signal(id, user_id)`: reserve a seat; answers `ok` or `full`.
    fn signal(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        if !self.reserved.contains_key(data) && self.taken(ctx) >= MAX_PLAYERS {
            return Ok((Flow::Continue, "full".into()));
        }
        self.reserved
            .insert(data.to_owned(), tick + RESERVATION_TICKS);
        self.update_label(ctx, d)?;
        Ok((Flow::Continue, "ok".into()))
    }
}

/// `get_match_native`: `{"match_id": …}` of a seed match with a seat reserved for the caller,
/// created if none has room.
pub async fn get_match(
    ctx: Arc<CallContext>,
    nk: Nk,
    _payload: String,
) -> Result<String, RpcError> {
    let user = ctx
        .request
        .user
        .as_ref()
        .map_or_else(|| nk.uuid_v4(), |u| u.user_id.to_string());
    for _ in 0..ATTEMPTS {
        let found = nk
            .match_list(ListQuery {
                limit: 5,
                authoritative: Some(true),
                label: None,
                min_size: Some(0),
                max_size: Some(MAX_PLAYERS as i32 - 1),
                query: Some(format!("+handler_name:{HANDLER} +label.open:1")),
            })
            .await?;
        for candidate in found {
            if reserve(&nk, &candidate.match_id, &user).await {
                return Ok(serde_json::json!({ "match_id": candidate.match_id }).to_string());
            }
        }
        // Others see a new match in listings at once and may fill it before our reservation
        // lands.
        let match_id = nk.match_create(HANDLER, serde_json::Map::new()).await?;
        if reserve(&nk, &match_id, &user).await {
            return Ok(serde_json::json!({ "match_id": match_id }).to_string());
        }
    }
    Err(RpcError::internal(format!(
        "no match had a free seat after {ATTEMPTS} attempts: try again"
    )))
}

/// Rounds of "look for a seat, else create a match" before `get_match` gives up. A round fails
/// only when every candidate, the new match too, filled up or had too many reservations in
/// flight (`match.signal_queue_size`).
const ATTEMPTS: usize = 3;

/// Reserves a seat for `user`; false when the match is full, busy or gone.
async fn reserve(nk: &Nk, match_id: &str, user: &str) -> bool {
    matches!(nk.match_signal(match_id, user.to_owned()).await, Ok(answer) if answer == "ok")
}
