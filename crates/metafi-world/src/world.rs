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

/// Points each id at its player's place in grid order, `order[k]` being the index in `src` of
/// the player that goes to place `k`: [`World::reindex`] after the gather, but read from the
/// gather's source so that it can run beside the gather.
pub(crate) fn index_in_order(index_of: &mut [u32], src: &[PlayerState], order: &[u32]) {
    for (k, &i) in order.iter().enumerate() {
        index_of[src[i as usize].id.0 as usize] = k as u32;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bots::{Behaviour, BotSpec, generate};
    use crate::map_gen;
    use crate::snapshot::PlayerView;

    fn pool(threads: usize) -> ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool")
    }

    /// The id table built beside the gather equals the one `reindex` builds after it, for
    /// seeded permutations of players with sparse ids (free slots stay free).
    #[test]
    fn index_in_order_matches_a_reindex_after_the_gather() {
        let mut seed = 11u64;
        let mut next = |n: usize| {
            seed = mix(seed);
            (seed % n as u64) as usize
        };
        for len in [0, 1, 2, 7, 100, 1000] {
            let slots = 2 * len + 3;
            let mut ids: Vec<u32> = (0..slots as u32).collect();
            let mut order: Vec<u32> = (0..len as u32).collect();
            for i in (1..slots).rev() {
                ids.swap(i, next(i + 1));
            }
            for i in (1..len).rev() {
                order.swap(i, next(i + 1));
            }
            let src: Vec<PlayerState> = ids[..len]
                .iter()
                .map(|&id| PlayerState {
                    id: PlayerId(id),
                    ..PlayerState::default()
                })
                .collect();
            let mut fresh = vec![NONE; slots];
            for (i, p) in src.iter().enumerate() {
                fresh[p.id.0 as usize] = i as u32;
            }
            let mut beside = fresh.clone();
            index_in_order(&mut beside, &src, &order);
            let gathered: Vec<PlayerState> = order.iter().map(|&i| src[i as usize]).collect();
            let mut after = fresh;
            for (k, p) in gathered.iter().enumerate() {
                after[p.id.0 as usize] = k as u32;
            }
            assert_eq!(beside, after, "{len} players");
        }
    }

    /// The merge files players while the intents are applied: after every tick of a fight with
    /// deaths, pickups and migrations, players are in cell order, each id finds its player,
    /// and each player's client is the one that was sent its snapshot.
    #[test]
    fn players_stay_in_grid_order_and_indexed_while_they_fight_and_migrate() {
        let p = pool(2);
        let map = Arc::new(Map::build(map_gen::arena(5), &p).expect("map"));
        let spec = BotSpec {
            behaviour: Behaviour::Mixed,
            bots: 64,
            duration_ms: 6_000,
            command_ms: 30,
            seed: 3,
        };
        let actions = generate(&map, &spec, &p);
        let mut w = World::new(map.clone(), WorldConfig::default()).expect("world");
        let ids: Vec<_> = actions
            .bots
            .iter()
            .map(|b| w.join_at(b.spawn, b.yaw).expect("join"))
            .collect();
        let mut cursors = vec![0; ids.len()];
        let (mut kills, mut migrations) = (0, 0);
        for t in 1..=120u32 {
            let before: Vec<u32> = w.players().iter().map(|p| p.id.0).collect();
            let mut cmds = Vec::new();
            for (i, bot) in actions.bots.iter().enumerate() {
                cmds.extend(bot.due(&mut cursors[i], t * 50).iter().map(|c| Command {
                    player: ids[i],
                    cmd: c.cmd,
                }));
            }
            kills += w.tick(&p, u64::from(t) * 50, &cmds).kills;
            let after: Vec<u32> = w.players().iter().map(|p| p.id.0).collect();
            migrations += usize::from(before != after);
            let cell = |p: &PlayerState| w.grid.geom.cell_of(p.origin);
            assert!(
                w.players().windows(2).all(|q| cell(&q[0]) <= cell(&q[1])),
                "tick {t}: players out of cell order"
            );
            for &id in &ids {
                assert_eq!(w.player(id).map(|p| p.id), Some(id), "tick {t}");
                // A row is found only under its owner's id, so a client moved apart from its
                // player would lose this tick's snapshot.
                let sent = w.sent(id, t).expect("snapshot of this tick");
                let player = w.player(id).expect("indexed");
                assert_eq!(sent.view, PlayerView::of(player), "tick {t}: {id:?}");
                // Last tick's row is kept by the client across the re-sort: a client left
                // behind by its player would now hold another player's rows.
                assert!(t == 1 || w.sent(id, t - 1).is_some(), "tick {t}: {id:?}");
            }
            w.ack(ids[t as usize % ids.len()], t).expect("known player");
        }
        assert!(
            kills > 0 && migrations > 10,
            "{kills} kills, {migrations} migrations"
        );
    }
}
