//! The world's own thread: the tick loop. It takes the inputs that arrived since the last tick
//! (joins, leaves, commands with acknowledgements), ticks the world on the world's rayon pool,
//! and hands every client its snapshot from the same pool, in parallel.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_proto::realtime::{DeliveryClass, Envelope, Format, MatchData, Message};
use metafi_realtime::{Pushed, Session, SessionRegistry};
use metafi_world::{Command, Phase, PlayerId, UserCmd, World};
use parking_lot::Mutex;
use rayon::prelude::*;
use uuid::Uuid;

use crate::codec::{self, CommandMsg};
use crate::stats::WorldStats;

/// Something for the world thread, queued by the match handler (joins, leaves) and by the
/// input tap (commands, on IO threads).
#[derive(Debug)]
pub(crate) enum Input {
    Join { session: Uuid },
    Leave { session: Uuid },
    Command { session: Uuid, msg: CommandMsg },
}

/// What the world thread shares with the handler, the tap and the debug listing.
#[derive(Debug)]
pub(crate) struct WorldShared {
    pub(crate) inbox: Mutex<Vec<Input>>,
    pub(crate) stop: AtomicBool,
    pub(crate) stats: Arc<WorldStats>,
    /// The console's top-down view, fed after each tick while someone watches.
    pub(crate) view: Arc<crate::view::WorldView>,
}

/// A player of the world and its client.
#[derive(Debug)]
struct Member {
    session_id: Uuid,
    player: PlayerId,
    session: Option<Arc<Session>>,
    /// Newest command sequence number taken (stale ones are dropped).
    seen: u32,
    /// Sequence number of the newest command applied.
    applied: u32,
    /// The command to apply at the next tick (latest wins).
    pending: Option<(u32, UserCmd)>,
    /// Newest acknowledgement received.
    acked: Option<u32>,
    welcomed: bool,
}

pub(crate) struct Runner {
    pub(crate) world: World,
    pub(crate) pool: rayon::ThreadPool,
    pub(crate) shared: Arc<WorldShared>,
    pub(crate) registry: Arc<SessionRegistry>,
    pub(crate) match_id: String,
    pub(crate) map_name: String,
    pub(crate) tick_rate: u32,
    pub(crate) max_outbox_messages: usize,
    members: Vec<Member>,
    by_session: HashMap<Uuid, usize>,
    commands: Vec<Command>,
    class: DeliveryClass,
}

impl Runner {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        world: World,
        pool: rayon::ThreadPool,
        shared: Arc<WorldShared>,
        registry: Arc<SessionRegistry>,
        match_id: String,
        map_name: String,
        tick_rate: u32,
        max_outbox_messages: usize,
    ) -> Runner {
        // Over QUIC a snapshot goes as the latest of its key (a datagram where it fits): a lost
        // one costs nothing, the next is encoded against an acknowledged baseline. WebSocket
        // delivers it reliably, in order.
        let class = DeliveryClass::latest(&format!("world/{match_id}"));
        Runner {
            world,
            pool,
            shared,
            registry,
            match_id,
            map_name,
            tick_rate,
            max_outbox_messages,
            members: Vec::new(),
            by_session: HashMap::new(),
            commands: Vec::new(),
            class,
        }
    }

    /// Ticks until told to stop.
    pub(crate) fn run(mut self) {
        let interval = Duration::from_nanos(1_000_000_000 / u64::from(self.tick_rate));
        let start = Instant::now();
        let mut slot: u64 = 1;
        loop {
            let deadline = start + interval * slot as u32;
            loop {
                if self.shared.stop.load(Ordering::Acquire) {
                    return;
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                std::thread::park_timeout(deadline - now);
            }
            let began = Instant::now();
            let late = began.saturating_duration_since(deadline);
            let stats = self.shared.stats.clone();
            stats
                .last_lateness_ns
                .store(late.as_nanos() as u64, Ordering::Relaxed);
            stats
                .max_lateness_ns
                .fetch_max(late.as_nanos() as u64, Ordering::Relaxed);
            metrics::histogram!("metafi_world_tick_lateness_seconds").record(late.as_secs_f64());
            let now_ms = (interval * slot as u32).as_millis() as u64;
            self.step(now_ms);
            // A world more than a tick behind skips the ticks it missed (counted) instead of
            // running them back to back.
            let behind = (began.elapsed() + late).as_nanos() / interval.as_nanos().max(1);
            slot += 1;
            if behind >= 1 {
                let skip = behind as u64;
                stats.skipped_ticks.fetch_add(skip, Ordering::Relaxed);
                slot += skip;
            }
        }
    }

    /// One served tick: inputs, the world's tick, the snapshots out.
    pub(crate) fn step(&mut self, now_ms: u64) {
        let t0 = Instant::now();
        self.take_inputs();
        let t1 = Instant::now();
        let mut marks: [Option<Instant>; 5] = [None; 5];
        let commands = std::mem::take(&mut self.commands);
        let summary = self
            .world
            .tick_observed(&self.pool, now_ms, &commands, &mut |phase| {
                let i = match phase {
                    Phase::Physics => 0,
                    Phase::Commands => 1,
                    Phase::Merge => 2,
                    Phase::Snapshots => 3,
                    Phase::Done => 4,
                };
                marks[i] = Some(Instant::now());
            });
        self.commands = commands;
        self.commands.clear();
        let t2 = Instant::now();
        self.send();
        self.shared.view.after_tick(&self.world);
        let t3 = Instant::now();
        let at = |i: usize, or: Instant| marks[i].unwrap_or(or);
        let span = |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
        let phases = [
            span(t0, t1),
            span(t1, at(1, t2)),
            span(at(1, t2), at(2, t2)),
            span(at(2, t2), at(3, t2)),
            span(at(3, t2), t2),
            span(t2, t3),
        ];
        let stats = &self.shared.stats;
        stats.record_phases(&phases);
        stats.ticks.fetch_add(1, Ordering::Relaxed);
        stats
            .players
            .store(summary.players as u64, Ordering::Relaxed);
        metrics::gauge!("metafi_world_players", "world" => self.match_id.clone())
            .set(summary.players as f64);
    }

    fn take_inputs(&mut self) {
        let inputs = std::mem::take(&mut *self.shared.inbox.lock());
        let stats = self.shared.stats.clone();
        for input in inputs {
            match input {
                Input::Join { session } => self.join(session),
                Input::Leave { session } => self.leave(session),
                Input::Command { session, msg } => {
                    let Some(&i) = self.by_session.get(&session) else {
                        continue;
                    };
                    let m = &mut self.members[i];
                    if let Some(tick) = msg.ack
                        && m.acked.is_none_or(|a| tick > a)
                        && tick <= self.world.current_tick()
                    {
                        m.acked = Some(tick);
                        let _ = self.world.ack(m.player, tick);
                    }
                    if msg.seq <= m.seen {
                        stats.stale_commands.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("metafi_world_commands_total", "result" => "stale")
                            .increment(1);
                        continue;
                    }
                    m.seen = msg.seq;
                    m.pending = Some((msg.seq, msg.cmd));
                    stats.commands.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("metafi_world_commands_total", "result" => "taken")
                        .increment(1);
                }
            }
        }
        for m in &mut self.members {
            if let Some((seq, cmd)) = m.pending.take() {
                m.applied = seq;
                self.commands.push(Command {
                    player: m.player,
                    cmd,
                });
            }
        }
    }

    fn join(&mut self, session_id: Uuid) {
        if self.by_session.contains_key(&session_id) {
            return;
        }
        let player = match self.world.join() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(world = %self.match_id, error = %e, "a player could not spawn");
                return;
            }
        };
        self.by_session.insert(session_id, self.members.len());
        self.members.push(Member {
            session_id,
            player,
            session: self.registry.get(session_id),
            seen: 0,
            applied: 0,
            pending: None,
            acked: None,
            welcomed: false,
        });
    }

    fn leave(&mut self, session_id: Uuid) {
        let Some(i) = self.by_session.remove(&session_id) else {
            return;
        };
        let m = self.members.swap_remove(i);
        if let Some(moved) = self.members.get(i) {
            self.by_session.insert(moved.session_id, i);
        }
        let _ = self.world.leave(m.player);
    }

    /// Hands every client its snapshot of the tick, in parallel on the world's pool: each
    /// message is encoded for its client's wire format there, not on an IO thread.
    fn send(&mut self) {
        let world = &self.world;
        let tick = world.current_tick();
        let match_id = self.match_id.as_str();
        let class = &self.class;
        let limit = self.max_outbox_messages;
        let welcome = |m: &Member| {
            serde_json::json!({
                "player": m.player.0,
                "tick_rate": self.tick_rate,
                "map": self.map_name,
                "tick": tick,
            })
            .to_string()
        };
        let welcomes: Vec<Option<String>> = self
            .members
            .iter()
            .map(|m| (!m.welcomed).then(|| welcome(m)))
            .collect();
        #[derive(Default, Clone, Copy)]
        struct Sums {
            bytes: u64,
            frames: u64,
            dropped: u64,
            ack_age: u64,
            ack_max: u64,
            acked: u64,
            unacked: u64,
        }
        let sums = self.pool.install(|| {
            self.members
                .par_iter()
                .zip(welcomes.par_iter())
                .with_min_len(16)
                .fold(
                    || (Sums::default(), Wrapper::new(match_id)),
                    |(mut s, mut wrapper), (m, welcome)| {
                        match m.acked {
                            Some(a) => {
                                let age = u64::from(tick.saturating_sub(a));
                                s.ack_age += age;
                                s.ack_max = s.ack_max.max(age);
                                s.acked += 1;
                            }
                            None => s.unacked += 1,
                        }
                        let Some(session) = &m.session else {
                            return (s, wrapper);
                        };
                        if session.is_ended() {
                            return (s, wrapper);
                        }
                        if let Some(text) = welcome {
                            wrapper.push(
                                session,
                                codec::OP_WELCOME,
                                Bytes::from(text.clone().into_bytes()),
                                DeliveryClass::default_stream(),
                            );
                        }
                        if session.outbox().len() > limit {
                            s.dropped += 1;
                            return (s, wrapper);
                        }
                        let Some(packet) = world.packet(m.player) else {
                            return (s, wrapper);
                        };
                        let data = Bytes::from(codec::snapshot_message(m.applied, packet));
                        let len = data.len() as u64;
                        if wrapper.push(session, codec::OP_SNAPSHOT, data, class.clone()) {
                            s.bytes += len;
                            s.frames += 1;
                        }
                        (s, wrapper)
                    },
                )
                .map(|(s, _)| s)
                .reduce(Sums::default, |a, b| Sums {
                    bytes: a.bytes + b.bytes,
                    frames: a.frames + b.frames,
                    dropped: a.dropped + b.dropped,
                    ack_age: a.ack_age + b.ack_age,
                    ack_max: a.ack_max.max(b.ack_max),
                    acked: a.acked + b.acked,
                    unacked: a.unacked + b.unacked,
                })
        });
        for m in &mut self.members {
            m.welcomed = true;
        }
        let stats = &self.shared.stats;
        stats.last_bytes_out.store(sums.bytes, Ordering::Relaxed);
        stats.last_frames_out.store(sums.frames, Ordering::Relaxed);
        stats.bytes_out.fetch_add(sums.bytes, Ordering::Relaxed);
        stats.frames_out.fetch_add(sums.frames, Ordering::Relaxed);
        stats
            .dropped_snapshots
            .fetch_add(sums.dropped, Ordering::Relaxed);
        stats.last_unacked.store(sums.unacked, Ordering::Relaxed);
        stats
            .last_ack_age_max
            .store(sums.ack_max, Ordering::Relaxed);
        stats.last_ack_age_mean_milli.store(
            (sums.ack_age * 1000).checked_div(sums.acked).unwrap_or(0),
            Ordering::Relaxed,
        );
        metrics::counter!("metafi_world_snapshot_bytes_total").increment(sums.bytes);
        metrics::counter!("metafi_world_snapshots_total", "result" => "sent")
            .increment(sums.frames);
        metrics::counter!("metafi_world_snapshots_total", "result" => "dropped")
            .increment(sums.dropped);
    }
}

/// Wraps a world's messages as Nakama's `MatchData` envelopes, one pool worker's batch at a
/// time: the envelope (and its copy of the match id) is made once per batch and only its
/// `op_code` and `data` change per message. Each message is encoded for its client's format
/// straight into the bytes the session queues, with no shared [`metafi_realtime::Outbound`]
/// around it: a snapshot has one recipient.
struct Wrapper {
    envelope: Envelope,
}

impl Wrapper {
    fn new(match_id: &str) -> Wrapper {
        Wrapper {
            envelope: Envelope::new(
                "",
                Message::MatchData(MatchData {
                    match_id: match_id.to_owned(),
                    presence: None,
                    op_code: 0,
                    data: Bytes::new(),
                    reliable: true,
                    delivery: None,
                }),
            ),
        }
    }

    /// Queues `data` with `op_code` for `session` as `class` says and wakes its writer; true
    /// when it was queued.
    fn push(&mut self, session: &Session, op_code: i64, data: Bytes, class: DeliveryClass) -> bool {
        let frame = self.encode(session.format(), op_code, data, class.is_reliable());
        session.send_encoded(frame, class) == Pushed::Queued
    }

    /// The envelope of `data` with `op_code`, encoded for `format`.
    fn encode(&mut self, format: Format, op_code: i64, data: Bytes, reliable: bool) -> Bytes {
        let message = self.message();
        message.op_code = op_code;
        message.data = data;
        message.reliable = reliable;
        let frame = Bytes::from(format.encode(&self.envelope));
        // The payload's buffer is freed now rather than when the next message replaces it.
        self.message().data = Bytes::new();
        frame
    }

    fn message(&mut self) -> &mut MatchData {
        match &mut self.envelope.message {
            Some(Message::MatchData(message)) => message,
            _ => {
                unreachable!("Wrapper::new makes the envelope a MatchData and nothing replaces it")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a client decodes is Nakama's `MatchData` envelope, whatever the wrapper reused.
    #[test]
    fn wrapped_messages_are_nakamas_match_data_envelopes_in_both_formats() {
        let mut wrapper = Wrapper::new("world-id.node");
        for format in [Format::Json, Format::Protobuf] {
            for (op_code, data, reliable) in [
                (codec::OP_WELCOME, &b"{\"player\":1}"[..], true),
                (codec::OP_SNAPSHOT, &[1, 2, 3, 250][..], false),
                (codec::OP_SNAPSHOT, &[7][..], false),
            ] {
                let frame = wrapper.encode(format, op_code, Bytes::copy_from_slice(data), reliable);
                let expected = Envelope::new(
                    "",
                    Message::MatchData(MatchData {
                        match_id: "world-id.node".into(),
                        presence: None,
                        op_code,
                        data: Bytes::copy_from_slice(data),
                        reliable,
                        delivery: None,
                    }),
                );
                assert_eq!(
                    frame,
                    Bytes::from(format.encode(&expected)),
                    "{format:?} op {op_code}"
                );
                assert_eq!(format.decode(&frame).unwrap(), expected);
            }
        }
    }
}
