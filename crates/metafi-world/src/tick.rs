//! The tick: world physics → commands → merge → snapshots.
//!
//! Every parallel phase reads immutable state and writes only what it owns: a projectile its
//! successor, a player its slot in the back buffer, a client its own history. Effects on others
//! travel as intents and are applied by the sequential, sorted merge. No locks, and the same
//! result for any pool size.

use std::cell::RefCell;

use rayon::ThreadPool;
use rayon::prelude::*;

use crate::cells::{GATHER_MAX, GATHER_MIN};
use crate::client::{Client, History, PacketBuf, PacketRef, RowsMut};
use crate::command::{Command, PlayerId};
use crate::grid::{GridView, PlayerGrid, gather};
use crate::intent::{
    Effects, Hit, apply_hits, resolve_claims, sort_claims, sort_hits, sort_launches,
};
use crate::interest::{EntityIndex, InterestConfig, InterestScratch, apply_tiers, keep, refresh};
use crate::player::PlayerState;
use crate::projectile::Projectile;
use crate::snapshot::{EntityKind, NetEntity, PlayerView, dequantize3, entity_key, quantize3};
use crate::step::{StepScratch, step_player};
use crate::vis::VisTable;
use crate::world::{Phase, TickSummary, World, index_in_order};

const NONE: u32 = u32::MAX;
/// Clients per snapshot work item: a run of consecutive rows of the history and one packet
/// buffer. Fixed, so the packet layout does not depend on the thread count.
pub(crate) const CLIENT_CHUNK: usize = 32;
/// Fewest rockets per physics work item: a rocket's flight is a microsecond or two, so fewer
/// would cost more in scheduling than they balance.
const ROCKETS_MIN: usize = 16;
/// Most rockets per physics work item. Without a cap rayon's adaptive splitting leaves a few
/// runs of hundreds of rockets, and the last one flies on one thread while the other waits.
const ROCKETS_MAX: usize = 2 * ROCKETS_MIN;

impl World {
    /// [`World::tick`], calling `observer` as each phase begins so the caller can time phases.
    /// The whole tick runs as one job of `pool` (the observer is called on a pool thread).
    pub fn tick_observed(
        &mut self,
        pool: &ThreadPool,
        now_ms: u64,
        commands: &[Command],
        observer: &mut (dyn FnMut(Phase) + Send),
    ) -> TickSummary {
        // One hand-off per tick: the sequential steps between phases run on a pool thread, so
        // each phase's parallel work starts from inside the pool instead of waking a sleeping
        // worker and then waking the caller again (tens of µs each on a virtual machine).
        pool.install(|| self.tick_in_pool(pool, now_ms, commands, observer))
    }

    fn tick_in_pool(
        &mut self,
        pool: &ThreadPool,
        now_ms: u64,
        commands: &[Command],
        observer: &mut (dyn FnMut(Phase) + Send),
    ) -> TickSummary {
        let dt = match self.last_now {
            None => self.config.tick_ms,
            Some(last) => now_ms.saturating_sub(last).min(250) as u32,
        };
        self.last_now = Some(now_ms);
        self.tick += 1;
        let mut sum = TickSummary {
            tick: self.tick,
            dt_ms: dt,
            ..TickSummary::default()
        };
        if self.dirty {
            self.refile(pool);
        }
        observer(Phase::Physics);
        self.physics_phase(pool, dt as i32, commands, &mut sum);
        observer(Phase::Commands);
        let fx = self.commands_phase(pool, dt as i32);
        observer(Phase::Merge);
        self.merge_phase(pool, fx, &mut sum);
        observer(Phase::Snapshots);
        self.snapshot_phase(pool, &mut sum);
        observer(Phase::Done);
        sum.players = self.players.len();
        sum.projectiles = self.projectiles.len();
        sum
    }

    /// Re-sorts players into grid order and re-indexes them after joins and leaves (the
    /// merge does the same for the cell migrations of a tick). The players' cells, the gathers
    /// of players and clients into the new order and the re-index run in `pool`; only the
    /// counting sort's O(players + cells) passes are sequential.
    pub(crate) fn refile(&mut self, pool: &ThreadPool) {
        // The current state becomes the gather's source, as `back` is after the commands phase.
        std::mem::swap(&mut self.players, &mut self.back);
        self.grid
            .cells_of(pool, &self.back, &mut self.scratch.cells);
        let s = &mut self.scratch;
        let (cells, order, clients_back) = (&s.cells, &mut s.order, &mut s.clients_back);
        file_clients(
            pool,
            &mut self.grid,
            cells,
            order,
            &self.clients,
            clients_back,
        );
        self.gather_players(pool);
    }

    /// Gathers the players from `back` into the grid order [`file_clients`] chose, swaps in
    /// the clients it gathered, and points the ids at their new places.
    fn gather_players(&mut self, pool: &ThreadPool) {
        let (back, order) = (&self.back, &self.scratch.order);
        let (players, index_of) = (&mut self.players, &mut self.index_of);
        // The id table is a sequential scatter: it runs beside the gather, not after it.
        pool.install(|| {
            rayon::join(
                || gather(pool, back, order, players),
                || index_in_order(index_of, back, order),
            )
        });
        std::mem::swap(&mut self.clients, &mut self.scratch.clients_back);
        self.dirty = false;
    }

    /// Rockets fly and explode, items count down; explosion damage is merged at once so the
    /// commands phase sees who is still alive. The commands are grouped by player meanwhile
    /// (they depend only on the ids), so that sequential pass overlaps the rockets' flight.
    fn physics_phase(
        &mut self,
        pool: &ThreadPool,
        dt: i32,
        commands: &[Command],
        sum: &mut TickSummary,
    ) {
        let (map, rules) = (&*self.map, &self.config.rules);
        let view = GridView {
            grid: &self.grid,
            players: &self.players,
            items: &self.items,
        };
        let (projectiles, index_of) = (&self.projectiles, &self.index_of);
        let (starts, cmds) = (&mut self.scratch.cmd_starts, &mut self.scratch.cmds);
        let (moved, grouped): (Vec<(Option<Projectile>, Vec<Hit>)>, _) = pool.install(|| {
            rayon::join(
                || {
                    projectiles
                        .par_iter()
                        .with_min_len(ROCKETS_MIN)
                        .with_max_len(ROCKETS_MAX)
                        .map(|p| {
                            let mut hits = Vec::new();
                            (p.advance(dt, map, &view, rules, &mut hits), hits)
                        })
                        .collect()
                },
                || group_commands(commands, index_of, starts, cmds),
            )
        });
        sum.commands = grouped.commands;
        sum.dropped_commands += grouped.dropped;
        let mut hits = Vec::new();
        self.projectiles.clear();
        for (p, h) in moved {
            self.projectiles.extend(p);
            hits.extend(h);
        }
        for it in &mut self.items {
            it.advance(dt);
        }
        sort_hits(&mut hits);
        sum.hits += hits.len();
        let index_of = &self.index_of;
        sum.kills += apply_hits(&hits, &mut self.players, |id| lookup(index_of, id), rules);
    }

    /// Each player runs its queued commands (grouped by the physics phase) against the state
    /// at the start of the phase, writing its own slot of the back buffer. Work items are runs
    /// of whole grid cells, scheduled by rayon's work stealing.
    fn commands_phase(&mut self, pool: &ThreadPool, dt: i32) -> Effects {
        let s = &mut self.scratch;
        self.grid.tasks(self.config.task_players, &mut s.tasks);
        self.back.resize(self.players.len(), PlayerState::default());
        let mut slices = Vec::with_capacity(s.tasks.len());
        let mut rest = &mut self.back[..];
        let mut offset = 0;
        for r in &s.tasks {
            let (head, tail) = rest.split_at_mut(r.end - offset);
            slices.push((r.start, head));
            rest = tail;
            offset = r.end;
        }
        let (map, rules) = (&*self.map, &self.config.rules);
        let view = GridView {
            grid: &self.grid,
            players: &self.players,
            items: &self.items,
        };
        let (players, starts, cmds) = (&self.players, &s.cmd_starts, &s.cmds);
        pool.install(|| {
            slices
                .into_par_iter()
                .with_max_len(1)
                .fold(Effects::default, |mut fx, (start, out)| {
                    STEP_SCRATCH.with_borrow_mut(|scratch| {
                        for (k, slot) in out.iter_mut().enumerate() {
                            let prev = &players[start + k];
                            let id = prev.id.0 as usize;
                            let mine = &cmds[starts[id] as usize..starts[id + 1] as usize];
                            *slot =
                                step_player(prev, mine, dt, map, rules, &view, &mut fx, scratch);
                        }
                    });
                    fx
                })
                .reduce(Effects::default, Effects::merge)
        })
    }

    /// Applies the intents in their canonical order and launches rockets while the players
    /// are filed by cell (the migrations), then gathers them into grid order.
    fn merge_phase(&mut self, pool: &ThreadPool, mut fx: Effects, sum: &mut TickSummary) {
        // Intents never move a player (hits change health and velocity, pickups the inventory),
        // so the new grid order depends only on where the commands phase left the players: the
        // counting sort and the clients' gather run beside the intents' sorts and the claims
        // instead of after them.
        self.grid
            .cells_of(pool, &self.back, &mut self.scratch.cells);
        let s = &mut self.scratch;
        let (cells, order, clients_back) = (&s.cells, &mut s.order, &mut s.clients_back);
        let (grid, clients) = (&mut self.grid, &self.clients);
        let (back, items, projectiles) = (&mut self.back, &mut self.items, &mut self.projectiles);
        let next_projectile = &mut self.next_projectile;
        let (rules, index_of) = (&self.config.rules, &self.index_of);
        let index = |id| lookup(index_of, id);
        let Effects {
            hits,
            claims,
            launches,
        } = &mut fx;
        // Sorting the hits, the longest of these sequential steps, needs nothing the claims,
        // the launches or the filing touch, so the three run at once; only applying the
        // sorted hits waits for all of them.
        pool.install(|| {
            rayon::join(
                || sort_hits(hits),
                || {
                    rayon::join(
                        || {
                            sort_claims(claims);
                            sum.pickups += resolve_claims(claims, items, back, index, rules);
                            sort_launches(launches);
                            sum.launches += launches.len();
                            for l in launches.iter() {
                                projectiles.push(Projectile::launched(*next_projectile, l, rules));
                                *next_projectile = next_projectile.wrapping_add(1);
                            }
                        },
                        || file_clients(pool, grid, cells, order, clients, clients_back),
                    )
                },
            )
        });
        sum.hits += hits.len();
        sum.kills += apply_hits(hits, back, index, rules);
        self.gather_players(pool);
    }

    /// Per client, in parallel: interest query over the new state, tiers, delta encoding.
    fn snapshot_phase(&mut self, pool: &ThreadPool, sum: &mut TickSummary) {
        let s = &mut self.scratch;
        let geom = s.entities.buckets.geom.clone();
        let entry = |e: NetEntity| (geom.cell_of(dequantize3(e.origin)), e);
        // Players, rockets and items, in parallel and in that order (so the index is the same
        // for any pool size), then indexed; one hand-off to the pool for both.
        let (players, projectiles, items) = (&self.players, &self.projectiles, &self.items);
        let (entries, order, vis) = (&mut s.entity_entries, &mut s.order, self.map.vis());
        let (history, clients, tick) = (&mut self.history, &mut self.clients, self.tick);
        pool.install(|| {
            players
                .par_iter()
                .with_min_len(GATHER_MIN)
                .with_max_len(GATHER_MAX)
                .map(NetEntity::of_player)
                .chain(projectiles.par_iter().map(NetEntity::of_projectile))
                .chain(
                    items
                        .par_iter()
                        .enumerate()
                        .map(|(i, it)| NetEntity::of_item(i as u32, it)),
                )
                .map(entry)
                .collect_into_vec(entries);
            // Retiring the slot reads only the clients' rows and acknowledgements, not the
            // entities, so it runs beside the index's sequential counting sort and key tables.
            rayon::join(
                || s.entities.rebuild(entries, vis, order),
                || {
                    let owned = players.iter().map(|p| p.id.0);
                    history.retire(tick, owned.zip(clients.iter_mut()));
                },
            )
        });

        let n = self.players.len();
        let chunks = n.div_ceil(CLIENT_CHUNK);
        if self.packets.len() < chunks {
            self.packets.resize_with(chunks, PacketBuf::default);
        }
        let mut slot = self.history.take_slot(self.tick, n);
        let ctx = SnapshotCtx {
            tick: self.tick,
            cfg: &self.config.interest,
            vis: self.map.vis(),
            players: &self.players,
            entities: &s.entities,
            history: &self.history,
        };
        let cap = self.history.cap();
        let (clients, packets) = (&mut self.clients, &mut self.packets[..chunks]);
        let (bytes, sent) = pool.install(|| {
            slot.par_chunks_mut(n, cap, CLIENT_CHUNK)
                .zip(clients.par_chunks_mut(CLIENT_CHUNK))
                .zip(packets.par_iter_mut())
                .enumerate()
                .with_max_len(1)
                .map(|(c, ((rows, clients), buf))| {
                    SCRATCH.with_borrow_mut(|scratch| ctx.send_run(c, rows, clients, buf, scratch))
                })
                .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        self.history.put_back(self.tick, slot);
        sum.snapshot_bytes = bytes;
        sum.entities_sent = sent;
    }
}

thread_local! {
    /// Movement buffers of each pool thread (nearby boxes and brushes), kept across ticks so the
    /// commands phase does not allocate once they have grown.
    static STEP_SCRATCH: RefCell<StepScratch> = RefCell::new(StepScratch::default());
    /// Interest buffers of each pool thread, kept across ticks so the snapshot phase does not
    /// allocate once they have grown.
    static SCRATCH: RefCell<InterestScratch> = RefCell::new(InterestScratch::default());
}

/// What every client's snapshot reads: the new state, immutable for the phase.
struct SnapshotCtx<'a> {
    tick: u32,
    cfg: &'a InterestConfig,
    vis: &'a VisTable,
    players: &'a [PlayerState],
    entities: &'a EntityIndex,
    history: &'a History,
}

impl SnapshotCtx<'_> {
    /// The snapshots of run `c` (clients `c * CLIENT_CHUNK ..`): for each client, its interest
    /// set (chosen afresh, or kept from the previous tick), tiers, its history row and packet.
    /// Returns (packet bytes, entities sent).
    fn send_run(
        &self,
        c: usize,
        mut rows: RowsMut<'_>,
        clients: &mut [Client],
        buf: &mut PacketBuf,
        scratch: &mut InterestScratch,
    ) -> (u64, u64) {
        let (tick, cfg, entities) = (self.tick, self.cfg, self.entities);
        buf.clear();
        let (mut bytes, mut sent) = (0u64, 0u64);
        for (k, client) in clients.iter_mut().enumerate() {
            let p = &self.players[c * CLIENT_CHUNK + k];
            let (eye, row) = (quantize3(p.origin), self.vis.row(p.origin));
            let packet =
                self.history
                    .send(client, p.id.0, tick, rows.row(k), buf, |prev, view, out| {
                        *view = PlayerView::of(p);
                        let prev_set = prev.map(|s| s.entities);
                        let n = match prev_set {
                            Some(set) if !cfg.refreshes(tick, p.id.0) => {
                                keep(tick, eye, set, entities, &row, cfg, out)
                            }
                            _ => {
                                let me = entity_key(EntityKind::Player, p.id.0);
                                refresh(eye, me, prev_set, entities, &row, cfg, scratch);
                                apply_tiers(tick, &scratch.chosen, entities.values(), prev, out)
                            }
                        };
                        sent += n as u64;
                        n
                    });
            client.packet = PacketRef {
                buf: c as u32,
                ..packet
            };
            bytes += u64::from(packet.len);
        }
        (bytes, sent)
    }
}

fn lookup(index_of: &[u32], id: PlayerId) -> Option<usize> {
    index_of
        .get(id.0 as usize)
        .filter(|&&i| i != NONE)
        .map(|&i| i as usize)
}

/// Files the players whose cells are `cells` into `grid` (filling `order`, see
/// [`PlayerGrid::file`]) and gathers `clients` into that order in `clients_back`.
fn file_clients(
    pool: &ThreadPool,
    grid: &mut PlayerGrid,
    cells: &[u32],
    order: &mut Vec<u32>,
    clients: &[Client],
    clients_back: &mut Vec<Client>,
) {
    grid.file(cells, order);
    pool.install(|| {
        order
            .par_iter()
            .with_min_len(GATHER_MIN)
            .with_max_len(GATHER_MAX)
            .map(|&i| clients[i as usize])
            .collect_into_vec(clients_back)
    });
}

/// How many commands [`group_commands`] kept and dropped.
struct Grouped {
    commands: usize,
    dropped: usize,
}

/// Groups commands by player id, keeping each player's commands in arrival order; commands for
/// unknown players are dropped.
fn group_commands(
    commands: &[Command],
    index_of: &[u32],
    starts: &mut Vec<u32>,
    out: &mut Vec<crate::command::UserCmd>,
) -> Grouped {
    let mut dropped = 0;
    let n = index_of.len();
    starts.clear();
    starts.resize(n + 1, 0);
    let known = |c: &Command| lookup(index_of, c.player).is_some();
    for c in commands {
        if known(c) {
            starts[c.player.0 as usize + 1] += 1;
        } else {
            dropped += 1;
        }
    }
    for i in 0..n {
        starts[i + 1] += starts[i];
    }
    out.clear();
    out.resize(starts[n] as usize, crate::command::UserCmd::default());
    // `starts[id]` walks the player's range as its commands are placed, ending at the next
    // player's start; shifting by one restores the starts (as in `cells::counting_sort`).
    for c in commands.iter().filter(|c| known(c)) {
        let slot = &mut starts[c.player.0 as usize];
        out[*slot as usize] = c.cmd;
        *slot += 1;
    }
    starts.copy_within(0..n, 1);
    starts[0] = 0;
    Grouped {
        commands: out.len(),
        dropped,
    }
}
