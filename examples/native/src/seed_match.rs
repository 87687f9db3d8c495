//! The seed benchmark's authoritative match as a native handler, and `get_match_native`, the
//! RPC that finds one with a free seat (or creates one) and reserves the seat for the caller.
//!
//! 10 ticks per second, at most 10 players, counting joins accepted but not yet completed and
//! seats the engine reserved for players on their way (both in `MatchContext::pending_joins`;
//! `get_match_native` reserves with `Nk::match_find_seat`), and seats reserved through
//! `nk.match_signal(id, user_id)` (the way scripts reserve on servers without the engine's seats),
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
/// created if none has room: the seed's logic ("a match with fewer than 10 players, else a new
/// one") as the engine's atomic find-or-create-and-reserve (`Nk::match_find_seat`,
/// `docs/MATCHES.md`, "Seats"), so concurrent callers never promise more than 10 seats.
pub async fn get_match(
    ctx: Arc<CallContext>,
    nk: Nk,
    _payload: String,
) -> Result<String, RpcError> {
    let user = ctx
        .request
        .user
        .as_ref()
        .map_or_else(Uuid::new_v4, |u| u.user_id);
    let query = ListQuery {
        limit: 1,
        authoritative: Some(true),
        ..ListQuery::default()
    };
    let match_id = nk
        .match_find_seat(
            HANDLER,
            serde_json::Map::new(),
            query,
            user,
            MAX_PLAYERS as u32,
        )
        .await?;
    Ok(serde_json::json!({ "match_id": match_id }).to_string())
}

/// `get_match_native_plain`: the seed's logic with no reservation (list a match with room,
/// else create one), to compare with [`get_match`]: at a rush, callers between a listing and
/// their join are all sent to the same match and the handler refuses those past 10.
pub async fn get_match_plain(
    _ctx: Arc<CallContext>,
    nk: Nk,
    _payload: String,
) -> Result<String, RpcError> {
    let found = nk
        .match_list(ListQuery {
            limit: 1,
            authoritative: Some(true),
            label: None,
            min_size: Some(0),
            max_size: Some(MAX_PLAYERS as i32 - 1),
            query: Some(format!("+handler_name:{HANDLER}")),
        })
        .await?;
    let match_id = match found.into_iter().next() {
        Some(m) => m.match_id,
        None => nk.match_create(HANDLER, serde_json::Map::new()).await?,
    };
    Ok(serde_json::json!({ "match_id": match_id }).to_string())
}
