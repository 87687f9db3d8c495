//! The world: state, membership and the public tick entry point. The tick's phases are in
//! `tick.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use rayon::ThreadPool;

use crate::client::{Client, History, PacketBuf};
use crate::command::{Command, PlayerId, UserCmd};
use crate::grid::PlayerGrid;
use crate::interest::{EntityIndex, InterestConfig};
use crate::item::ItemState;
use crate::map::Map;
use crate::math::Vec3;
use crate::player::{PlayerState, mix};
use crate::projectile::Projectile;
use crate::rules::Rules;
use crate::snapshot::{NetEntity, Snapshot};
use crate::vis::{VIS_CELL, VIS_REACH};

/// Most players one world holds (ids are dense slots below this).
pub const MAX_PLAYERS: usize = 1 << 20;
const NONE: u32 = u32::MAX;
/// Longest interest refresh period accepted: 8 ticks (400 ms at 20 ticks/s) is already a late
/// arrival a player would notice.
pub const MAX_REFRESH_TICKS: u32 = 8;

/// World parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldConfig {
    pub rules: Rules,
    pub interest: InterestConfig,
    /// Nominal tick length; the first tick uses it, later ticks use the caller's `now` deltas.
    pub tick_ms: u32,
    /// Fewest players per parallel work item in the commands phase (whole cells are grouped
    /// until this many): enough to amortise scheduling, few enough for many items per core.
    pub task_players: usize,
}

impl Default for WorldConfig {
    fn default() -> WorldConfig {
        WorldConfig {
            rules: Rules::default(),
            interest: InterestConfig::default(),
            tick_ms: 50,
            task_players: 32,
        }
    }
}

/// Why a world call was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("invalid world config: {field} {reason}")]
    Config {
        field: &'static str,
        reason: &'static str,
    },
    #[error("world is full ({MAX_PLAYERS} players)")]
    Full,
    #[error("no player with id {id}")]
    UnknownPlayer { id: u32 },
    #[error("spawn position is outside the map")]
    BadSpawn,
}

/// The tick's phases, reported to an observer as each begins (`Done` after the last), so a
/// caller can time them without the world reading a clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Physics,
    Commands,
    Merge,
    Snapshots,
    Done,
}

/// Counters for one tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickSummary {
    pub tick: u32,
    pub dt_ms: u32,
    pub players: usize,
    pub projectiles: usize,
    pub commands: usize,
    /// Commands for players not in the world.
    pub dropped_commands: usize,
    pub hits: usize,
    pub kills: usize,
    pub pickups: usize,
    pub launches: usize,
    pub snapshot_bytes: u64,
    pub entities_sent: u64,
}

/// A first-person-action world simulated in parallel and deterministically.
#[derive(Debug)]
pub struct World {
    pub(crate) map: Arc<Map>,
    pub(crate) config: WorldConfig,
    pub(crate) tick: u32,
    /// The caller's clock at the last tick, to turn the next `now` into a time step.
    pub(crate) last_now: Option<u64>,
    /// Current state, in grid cell order.
    pub(crate) players: Vec<PlayerState>,
    /// Next state being written by the commands phase (double buffering).
    pub(crate) back: Vec<PlayerState>,
    pub(crate) grid: PlayerGrid,
    /// Player id → index in `players`, `NONE` for free slots.
    pub(crate) index_of: Vec<u32>,
    pub(crate) free_ids: BTreeSet<u32>,
    /// Joins or leaves since the grid was built.
    pub(crate) dirty: bool,
    /// Client bookkeeping, aligned with `players` (permuted with them), so the snapshot phase
    /// walks viewers in grid order and neighbouring viewers share hot cache lines.
    pub(crate) clients: Vec<Client>,
    /// Every client's sent snapshots, one row per client per slot, written in grid order.
    pub(crate) history: History,
    /// This tick's packets, one buffer per run of [`crate::tick::CLIENT_CHUNK`] clients in
    /// grid order; each [`Client`] knows where its own is.
    pub(crate) packets: Vec<PacketBuf>,
    /// In id order.
    pub(crate) projectiles: Vec<Projectile>,
    pub(crate) next_projectile: u32,
    pub(crate) items: Vec<ItemState>,
    pub(crate) scratch: Scratch,
}

/// Buffers reused every tick so the steady state does not allocate per entity.
#[derive(Debug)]
pub(crate) struct Scratch {
    pub cells: Vec<u32>,
    pub order: Vec<u32>,
    /// `clients` gathered into the new grid order by `refile`, then swapped in.
    pub clients_back: Vec<Client>,
    pub cmd_starts: Vec<u32>,
    pub cmds: Vec<UserCmd>,
    pub tasks: Vec<std::ops::Range<usize>>,
    pub entity_entries: Vec<(u32, NetEntity)>,
    pub entities: EntityIndex,
}

impl World {
    pub fn new(map: Arc<Map>, config: WorldConfig) -> Result<World, WorldError> {
        validate(&config)?;
        let grid = PlayerGrid::new(map.bounds());
        // The snapshot entity index uses the visibility cell size: a scanned row of index cells
        // is then one row of visibility cells, tested for visibility once (see `interest`).
        let entities = EntityIndex::new(crate::cells::CellGeom::covering(map.bounds(), VIS_CELL));
        let items = map.items().iter().map(ItemState::new).collect();
        let history = History::new(config.interest.max_entities);
        Ok(World {
            map,
            config,
            tick: 0,
            last_now: None,
            players: Vec::new(),
            back: Vec::new(),
            grid,
            index_of: Vec::new(),
            free_ids: BTreeSet::new(),
            dirty: false,
            clients: Vec::new(),
            history,
            packets: Vec::new(),
            projectiles: Vec::new(),
            next_projectile: 0,
            items,
            scratch: Scratch {
                cells: Vec::new(),
                order: Vec::new(),
                clients_back: Vec::new(),
                cmd_starts: Vec::new(),
                cmds: Vec::new(),
                tasks: Vec::new(),
                entity_entries: Vec::new(),
                entities,
            },
        })
    }

    /// Adds a player at a spawn point chosen from its id.
    pub fn join(&mut self) -> Result<PlayerId, WorldError> {
        let id = self.next_free_id()?;
        let spawns = self.map.spawns();
        let s = spawns[(mix(u64::from(id)) % spawns.len() as u64) as usize];
        self.insert(id, s.origin, s.yaw)
    }

    /// Adds a player at a given position (e.g. where a recorded bot started).
    pub fn join_at(&mut self, origin: Vec3, yaw: u16) -> Result<PlayerId, WorldError> {
        if !origin.is_finite() || !self.map.bounds().contains_point(origin) {
            return Err(WorldError::BadSpawn);
        }
        let id = self.next_free_id()?;
        self.insert(id, origin, yaw)
    }

    pub fn leave(&mut self, id: PlayerId) -> Result<(), WorldError> {
        let idx = self.index(id)?;
        self.players.remove(idx);
        self.clients.remove(idx);
        self.index_of[id.0 as usize] = NONE;
        self.free_ids.insert(id.0);
        self.reindex();
        self.dirty = true;
        Ok(())
    }

    /// Records that `id`'s client received the snapshot of `tick`.
    pub fn ack(&mut self, id: PlayerId, tick: u32) -> Result<(), WorldError> {
        let i = self.index(id)?;
        self.clients[i].ack(tick);
        Ok(())
    }

    /// Advances the world to `now_ms` (the caller's clock, milliseconds) applying `commands`.
    pub fn tick(&mut self, pool: &ThreadPool, now_ms: u64, commands: &[Command]) -> TickSummary {
        self.tick_observed(pool, now_ms, commands, &mut |_| {})
    }

    pub fn map(&self) -> &Arc<Map> {
        &self.map
    }

    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// Number of the last completed tick (0 before the first).
    pub fn current_tick(&self) -> u32 {
        self.tick
    }

    pub fn player(&self, id: PlayerId) -> Option<&PlayerState> {
        self.index(id).ok().map(|i| &self.players[i])
    }

    /// Mutable access for tests and tools (e.g. placing a player); the next tick re-files it.
    pub fn player_mut(&mut self, id: PlayerId) -> Option<&mut PlayerState> {
        let i = self.index(id).ok()?;
        self.dirty = true;
        Some(&mut self.players[i])
    }

    /// All players, in grid order.
    pub fn players(&self) -> &[PlayerState] {
        &self.players
    }

    pub fn projectiles(&self) -> &[Projectile] {
        &self.projectiles
    }

    pub fn items(&self) -> &[ItemState] {
        &self.items
    }

    pub fn client(&self, id: PlayerId) -> Option<&Client> {
        self.index(id).ok().map(|i| &self.clients[i])
    }

    /// The snapshot packet sent to `id` in the last tick (empty before its first tick).
    pub fn packet(&self, id: PlayerId) -> Option<&[u8]> {
        let r = self.client(id)?.packet;
        self.packets.get(r.buf as usize)?.get(r)
    }

    /// The snapshot `id`'s client was sent for `tick`, if still remembered (the last
    /// [`crate::client::SNAPSHOT_HISTORY`] ticks).
    pub fn sent(&self, id: PlayerId, tick: u32) -> Option<Snapshot> {
        let c = self.client(id)?;
        self.history.sent(c, id.0, tick).map(|s| s.to_snapshot())
    }

    /// A hash of the whole simulated state (players by id, projectiles, items, tick), bit-exact:
    /// equal hashes after the same inputs prove the thread count did not change the result.
    pub fn state_hash(&self) -> u64 {
        let mut h = StateHasher::default();
        h.word(self.tick);
        for &i in &self.index_of {
            if i != NONE {
                self.players[i as usize]
                    .to_words()
                    .iter()
                    .for_each(|&w| h.word(w));
            }
        }
        for p in &self.projectiles {
            for w in [
                p.id,
                p.owner.0,
                p.origin.x.to_bits(),
                p.origin.y.to_bits(),
                p.origin.z.to_bits(),
            ] {
                h.word(w);
            }
            for w in [
                p.velocity.x.to_bits(),
                p.velocity.y.to_bits(),
                p.velocity.z.to_bits(),
                p.life_ms as u32,
            ] {
                h.word(w);
            }
        }
        for it in &self.items {
            h.word(it.respawn_ms as u32);
        }
        h.finish()
    }

    pub(crate) fn index(&self, id: PlayerId) -> Result<usize, WorldError> {
        match self.index_of.get(id.0 as usize) {
            Some(&i) if i != NONE => Ok(i as usize),
            _ => Err(WorldError::UnknownPlayer { id: id.0 }),
        }
    }

    pub(crate) fn reindex(&mut self) {
        for (i, p) in self.players.iter().enumerate() {
            self.index_of[p.id.0 as usize] = i as u32;
        }
    }

    fn next_free_id(&mut self) -> Result<u32, WorldError> {
        if let Some(id) = self.free_ids.pop_first() {
            return Ok(id);
        }
        if self.index_of.len() >= MAX_PLAYERS {
            return Err(WorldError::Full);
        }
        self.index_of.push(NONE);
        Ok(self.index_of.len() as u32 - 1)
    }

    fn insert(&mut self, id: u32, origin: Vec3, yaw: u16) -> Result<PlayerId, WorldError> {
        let pid = PlayerId(id);
        self.index_of[id as usize] = self.players.len() as u32;
        self.players
            .push(PlayerState::spawned(pid, origin, yaw, &self.config.rules));
        self.clients.push(Client::default());
        self.dirty = true;
        Ok(pid)
    }
}

fn validate(c: &WorldConfig) -> Result<(), WorldError> {
    let bad = |field, reason| Err(WorldError::Config { field, reason });
    let i = &c.interest;
    if !(i.view_radius > 0.0 && i.view_radius <= VIS_REACH) {
        return bad("interest.view_radius", "must be in (0, 2048]");
    }
    if !(i.near_radius >= 0.0 && i.near_radius <= i.mid_radius && i.mid_radius <= i.view_radius) {
        return bad("interest radii", "must satisfy 0 <= near <= mid <= view");
    }
    if i.max_entities == 0 || i.max_entities > crate::delta::MAX_SNAPSHOT_ENTITIES {
        return bad("interest.max_entities", "must be in 1..=4096");
    }
    if i.refresh_ticks == 0 || i.refresh_ticks > MAX_REFRESH_TICKS {
        return bad("interest.refresh_ticks", "must be in 1..=8 (1: every tick)");
    }
    if c.tick_ms == 0 || c.tick_ms > 250 {
        return bad("tick_ms", "must be in 1..=250");
    }
    if c.task_players == 0 {
        return bad("task_players", "must be at least 1");
    }
    Ok(())
}

/// FNV-style word hash with a SplitMix finish.
#[derive(Debug)]
struct StateHasher(u64);

impl Default for StateHasher {
    fn default() -> StateHasher {
        StateHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl StateHasher {
    fn word(&mut self, w: u32) {
        self.0 = (self.0 ^ u64::from(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }

    fn finish(&self) -> u64 {
        mix(self.0)
    }
}
