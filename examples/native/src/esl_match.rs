//! The ESL consolidation benchmark's match (`metafi-bench esl`, docs/BENCHMARKS.md "ESL
//! consolidation") as a native handler, and `esl_create_native`, the RPC that creates one.
//!
//! A competitive shooter's server in miniature: at most 12 players, 64 or 128 ticks per second
//! (`tick_rate` parameter). Every player sends an input on op code 1 each tick (40–200 bytes:
//! the first [`INPUT_HEAD`] characters are its slot, 2 hex digits, and its input sequence, 8 hex
//! digits); each tick the match applies the inputs that arrived (the highest sequence per slot is
//! kept), runs `work` rounds of simulated game logic (`expensive` multiplies them by 10), and
//! sends every player a state update on op code 2 of `state_size` bytes (default 2,000) that
//! starts with the tick (8 hex digits) and, per slot, the highest input sequence applied so far
//! (8 hex digits each, [`SLOTS`] slots): the client measures input → update latency from it.
//! The match ends when its last player leaves.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use metafi_match::{
    Dispatcher, Flow, HandlerError, JoinRequest, JoinVerdict, MatchContext, MatchHandler,
    MatchInit, MatchMessage, Params, Presence, PresenceReason,
};
use metafi_runtime::{CallContext, Nk, RpcError};
use uuid::Uuid;

/// The handler name `nk.match_create` uses.
pub const HANDLER: &str = "esl_native";
/// Players (and input slots) of a match.
pub const SLOTS: usize = 12;
/// Characters at the start of an input: slot (2 hex digits) and sequence (8 hex digits).
pub const INPUT_HEAD: usize = 10;
/// Characters at the start of a state update that carry information: the tick and one
/// sequence per slot.
pub const STATE_HEAD: usize = 8 + 8 * SLOTS;
/// Op code of inputs (client → server).
pub const OP_INPUT: i64 = 1;
/// Op code of state updates (server → client).
pub const OP_STATE: i64 = 2;
const DEFAULT_TICK_RATE: u32 = 64;
const DEFAULT_STATE_SIZE: usize = 2000;
const DEFAULT_WORK: u64 = 20_000;

/// One ESL match.
#[derive(Debug)]
pub struct EslMatch {
    players: HashSet<Uuid>,
    ever_joined: bool,
    /// Highest input sequence applied, per slot.
    applied: [u32; SLOTS],
    state_size: usize,
    /// Rounds of simulated game logic per tick.
    work: u64,
    /// The simulated world's state (what the work computes, so it is not optimised away).
    world: u64,
}

impl Default for EslMatch {
    fn default() -> Self {
        EslMatch {
            players: HashSet::new(),
            ever_joined: false,
            applied: [0; SLOTS],
            state_size: DEFAULT_STATE_SIZE,
            work: DEFAULT_WORK,
            world: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

/// Reads an input's slot and sequence.
pub fn read_input(data: &[u8]) -> Option<(usize, u32)> {
    let head = std::str::from_utf8(data.get(..INPUT_HEAD)?).ok()?;
    let slot = usize::from_str_radix(&head[..2], 16).ok()?;
    let seq = u32::from_str_radix(&head[2..], 16).ok()?;
    (slot < SLOTS).then_some((slot, seq))
}

/// The state update of `tick`: the head (tick, sequences applied per slot), padded to `size`.
pub fn state_update(tick: i64, applied: &[u32; SLOTS], size: usize, world: u64) -> Bytes {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(size.max(STATE_HEAD));
    let _ = write!(text, "{:08x}", tick as u32);
    for seq in applied {
        let _ = write!(text, "{seq:08x}");
    }
    // the rest of the update: the world's state, repeated (a real game sends positions here)
    let filler = format!("{world:016x}");
    while text.len() < size {
        let take = (size - text.len()).min(filler.len());
        text.push_str(&filler[..take]);
    }
    Bytes::from(text)
}

/// `rounds` of a cheap mixing function standing for the game's simulation.
fn simulate(mut world: u64, rounds: u64) -> u64 {
    for i in 0..rounds {
        world ^= world << 13;
        world ^= world >> 7;
        world ^= world << 17;
        world = world.wrapping_add(i);
    }
    std::hint::black_box(world)
}

fn param_u64(params: &Params, key: &str) -> Option<u64> {
    params.get(key).and_then(serde_json::Value::as_u64)
}

impl MatchHandler for EslMatch {
    fn init(&mut self, _ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError> {
        let tick_rate = param_u64(params, "tick_rate").map_or(DEFAULT_TICK_RATE, |r| r as u32);
        self.state_size = param_u64(params, "state_size")
            .map_or(DEFAULT_STATE_SIZE, |s| s as usize)
            .max(STATE_HEAD);
        self.work = param_u64(params, "work").unwrap_or(DEFAULT_WORK);
        if params
            .get("expensive")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
        {
            self.work = self.work.saturating_mul(10);
        }
        Ok(MatchInit {
            tick_rate,
            label: format!(r#"{{"kind":"esl","tick_rate":{tick_rate}}}"#),
        })
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        let allow = self.players.len() + ctx.pending_joins < SLOTS;
        Ok(JoinVerdict {
            flow: Flow::Continue,
            allow,
            reason: (!allow).then(|| "match full".to_owned()),
        })
    }

    fn join(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        self.players.extend(presences.iter().map(|p| p.session_id));
        self.ever_joined = true;
        Ok(Flow::Continue)
    }

    fn leave(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
        _reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        for p in presences {
            self.players.remove(&p.session_id);
        }
        Ok(if self.players.is_empty() {
            Flow::End
        } else {
            Flow::Continue
        })
    }

    fn tick(
        &mut self,
        _ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        for m in messages {
            if m.op_code != OP_INPUT {
                continue;
            }
            if let Some((slot, seq)) = read_input(&m.data) {
                self.applied[slot] = self.applied[slot].max(seq);
                self.world = self.world.rotate_left(5) ^ u64::from(seq);
            }
        }
        if self.players.is_empty() {
            return Ok(Flow::Continue);
        }
        self.world = simulate(self.world, self.work);
        let update = state_update(tick, &self.applied, self.state_size, self.world);
        d.broadcast(OP_STATE, &update, None, None, true);
        Ok(Flow::Continue)
    }

    fn terminate(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        Ok(Flow::End)
    }

    fn signal(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        Ok((Flow::Continue, String::new()))
    }
}

/// `esl_create_native`: creates an ESL match with the payload's parameters (`tick_rate`,
/// `state_size`, `work`, `expensive`; a JSON object, empty for the defaults) and answers
/// `{"match_id": …}`. A full node's refusal (RESOURCE_EXHAUSTED, "Node is full: …") is passed on.
pub async fn create(_ctx: Arc<CallContext>, nk: Nk, payload: String) -> Result<String, RpcError> {
    let params = if payload.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_json::from_str::<serde_json::Value>(&payload) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => return Err(RpcError::invalid_argument("payload must be a JSON object")),
        }
    };
    let match_id = nk.match_create(HANDLER, params).await?;
    Ok(serde_json::json!({ "match_id": match_id }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_carry_slot_and_sequence() {
        assert_eq!(read_input(b"0b0000002a......"), Some((11, 42)));
        assert_eq!(read_input(b"0c0000002a"), None, "slot 12 does not exist");
        assert_eq!(read_input(b"0b00"), None);
        assert_eq!(read_input(b"zz0000002a"), None);
    }

    #[test]
    fn updates_have_the_size_asked_and_carry_every_slot() {
        let mut applied = [0u32; SLOTS];
        applied[3] = 0x1234;
        let update = state_update(7, &applied, 2000, 99);
        assert_eq!(update.len(), 2000);
        assert_eq!(&update[..8], b"00000007");
        assert_eq!(&update[8 + 3 * 8..8 + 4 * 8], b"00001234");
        assert_eq!(state_update(1, &applied, 10, 0).len(), STATE_HEAD);
    }
}
