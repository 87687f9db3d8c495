//! Workloads: a map and a recording of bot commands, and the feeder that replays them.

use std::ops::Range;
use std::sync::Arc;

use metafi_world::bots::{Behaviour, BotSpec, generate};
use metafi_world::map_gen;
use metafi_world::{ActionFile, Command, Map, PlayerId};
use rayon::ThreadPool;

/// Milliseconds per tick: 20 ticks/s.
pub const TICK_MS: u32 = 50;
/// Length of each recording; replays loop over it.
pub const RECORDING_MS: u32 = 10_000;

/// Which map a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum MapKind {
    /// The small dense arena (3072 × 3072).
    Arena,
    /// The large open map sized for the player count at 512 × 512 units² per player.
    Large,
}

impl MapKind {
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Arena => "arena",
            MapKind::Large => "large",
        }
    }
}

/// One map and one recording, shared by every scheduler in a configuration.
pub struct Workload {
    pub map: Arc<Map>,
    pub actions: ActionFile,
}

impl Workload {
    /// Builds the map and generates the recording (both seeded, so every process and every
    /// scheduler sees the same inputs).
    pub fn build(
        kind: MapKind,
        players: usize,
        behaviour: Behaviour,
        pool: &ThreadPool,
    ) -> anyhow::Result<Workload> {
        let spec = match kind {
            MapKind::Arena => map_gen::arena(1),
            MapKind::Large => map_gen::open_for_players(players, map_gen::AREA_PER_PLAYER, 1),
        };
        let map = Arc::new(Map::build(spec, pool)?);
        let bots = BotSpec {
            behaviour,
            bots: players,
            duration_ms: RECORDING_MS,
            command_ms: 30,
            seed: 2024,
        };
        let actions = generate(&map, &bots, pool);
        Ok(Workload { map, actions })
    }
}

/// Replays a range of bots' tracks, looping the recording; bot `i` is player id `i`.
pub struct Feeder {
    range: Range<usize>,
    cursors: Vec<usize>,
    lap: u64,
}

impl Feeder {
    pub fn new(range: Range<usize>) -> Feeder {
        let cursors = vec![0; range.len()];
        Feeder {
            range,
            cursors,
            lap: 0,
        }
    }

    /// Appends the commands the bots sent before the end of `tick`.
    pub fn fill(&mut self, actions: &ActionFile, tick: u32, out: &mut Vec<Command>) {
        let now = u64::from(tick) * u64::from(TICK_MS);
        let lap = now / u64::from(RECORDING_MS);
        if lap != self.lap {
            // Finish the old lap, then start the recording over.
            self.take(actions, RECORDING_MS, out);
            self.cursors.iter_mut().for_each(|c| *c = 0);
            self.lap = lap;
        }
        self.take(actions, (now % u64::from(RECORDING_MS)) as u32, out);
    }

    fn take(&mut self, actions: &ActionFile, until: u32, out: &mut Vec<Command>) {
        for (k, bot) in actions.bots[self.range.clone()].iter().enumerate() {
            let player = PlayerId((self.range.start + k) as u32);
            out.extend(
                bot.due(&mut self.cursors[k], until)
                    .iter()
                    .map(|c| Command { player, cmd: c.cmd }),
            );
        }
    }
}

/// Whether the client of `player` acknowledges the snapshot of `tick` (about 1 in 50 lost).
pub fn acked(player: usize, tick: u32) -> bool {
    !metafi_world::player::mix((player as u64) << 32 | u64::from(tick)).is_multiple_of(50)
}

/// Acknowledgements arrive this many ticks after the snapshot was sent (100 ms round trip).
pub const ACK_DELAY: u32 = 2;
