//! The seed's parallel server (Abdelkhalek & Bilas): a fixed set of threads, players assigned to
//! threads in blocks, three phases separated by global barriers, world physics by a master
//! thread, and requests executed under region locks on the areanode tree — the leaves the move's
//! bounding box overlaps, held in index order for the whole move; parent nodes locked only while
//! their list is read or written; a directional box for shots (the seed's optimised locking);
//! launches into one global buffer behind one lock. Replies are read-only.

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Barrier, Mutex, MutexGuard, PoisonError, RwLock, TryLockError};
use std::time::Instant;

use metafi_world::client::ClientTable;
use metafi_world::combat::{fire, will_fire};
use metafi_world::intent::{Effects, Launch, apply_hit};
use metafi_world::interest::InterestScratch;
use metafi_world::item::ItemState;
use metafi_world::math::view_vectors;
use metafi_world::movement::pmove;
use metafi_world::rules::PLAYER_HALF;
use metafi_world::snapshot::NetEntity;
use metafi_world::step::{begin_tick, clip_command, move_area, touch_items};
use metafi_world::{
    Aabb, Command, Map, Neighbourhood, PlayerId, PlayerState, Projectile, UserCmd, Weapon,
    WorldConfig,
};

use crate::affinity::Pinning;
use crate::areatree::AreaTree;
use crate::measure::{RunOutcome, RunPlan, TickSample};
use crate::replies::{ProjectileFrame, ReplyCtx, ReplySources, reply};
use crate::sched_seq::LEAF_SIZE;
use crate::shared_player::{SharedNet, SharedPlayer};
use crate::treeview::{NodeLists, TreeView};
use crate::workload::{ACK_DELAY, Feeder, TICK_MS, Workload, acked};

/// State every thread sees.
struct Shared<'a> {
    work: &'a Workload,
    map: &'a Map,
    config: WorldConfig,
    tree: AreaTree,
    /// Player ids linked to each areanode; the lock is the region lock.
    lists: Vec<Mutex<Vec<u32>>>,
    players: Vec<SharedPlayer>,
    /// Each player's wire state, written by its thread after its requests.
    net: Vec<SharedNet>,
    /// Item respawn timers (kind and place are in the map).
    items: Vec<AtomicI32>,
    /// The seed's global state buffer: rockets launched this frame.
    launches: Mutex<Vec<Launch>>,
    /// Rockets in flight, written by the master in the physics phase, read in replies.
    frame: RwLock<ProjectileFrame>,
    barrier: Barrier,
    tick: AtomicU32,
    stop: AtomicBool,
    measuring: AtomicBool,
    bytes: AtomicU64,
    entities: AtomicU64,
    hits: AtomicU64,
    kills: AtomicU64,
    lock_ns: AtomicU64,
    barrier_ns: AtomicU64,
    /// Leaves a query needed but did not hold (should stay zero; counted, never blocked on).
    missed: AtomicU64,
}

type Held<'s> = Vec<(u32, MutexGuard<'s, Vec<u32>>)>;

/// Node lists as seen by a thread holding `held` leaves (or, for the master in the physics
/// phase, locking every node briefly).
struct Locked<'s, 'h> {
    shared: &'s Shared<'s>,
    held: &'h [(u32, MutexGuard<'s, Vec<u32>>)],
    brief_all: bool,
    waited: &'h Cell<u64>,
}

impl NodeLists for Locked<'_, '_> {
    fn tree(&self) -> &AreaTree {
        &self.shared.tree
    }

    fn each_in_node(&self, node: u32, mut f: impl FnMut(&PlayerState)) {
        let mut emit = |ids: &[u32]| {
            for &i in ids {
                let p = self.shared.players[i as usize].glance();
                if p.alive() {
                    f(&p);
                }
            }
        };
        if let Ok(k) = self.held.binary_search_by_key(&node, |h| h.0) {
            emit(&self.held[k].1);
        } else if self.brief_all || self.shared.tree.nodes[node as usize].split.is_some() {
            emit(&lock(&self.shared.lists[node as usize], self.waited));
        } else {
            self.shared.missed.fetch_add(1, Relaxed);
        }
    }

    fn item_available(&self, index: u32) -> bool {
        self.shared
            .items
            .get(index as usize)
            .is_some_and(|t| t.load(Relaxed) <= 0)
    }
}

/// Locks `m`, adding the time spent blocked (if any) to `waited`.
fn lock<'m, T>(m: &'m Mutex<T>, waited: &Cell<u64>) -> MutexGuard<'m, T> {
    match m.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(e)) => e.into_inner(),
        Err(TryLockError::WouldBlock) => {
            let t = Instant::now();
            let g = m.lock().unwrap_or_else(PoisonError::into_inner);
            waited.set(waited.get() + t.elapsed().as_nanos() as u64);
            g
        }
    }
}

pub fn run(
    work: &Workload,
    threads: usize,
    plan: &RunPlan,
    pinning: &Pinning,
) -> anyhow::Result<RunOutcome> {
    let map = &*work.map;
    let config = WorldConfig::default();
    let tree = AreaTree::new(map.bounds(), AreaTree::depth_for(map.bounds(), LEAF_SIZE));
    let n = work.actions.bots.len();
    let states: Vec<PlayerState> = work
        .actions
        .bots
        .iter()
        .enumerate()
        .map(|(i, b)| PlayerState::spawned(PlayerId(i as u32), b.spawn, b.yaw, &config.rules))
        .collect();
    let mut lists = vec![Vec::new(); tree.nodes.len()];
    for p in &states {
        lists[tree.node_for(&p.bbox()) as usize].push(p.id.0);
    }
    let shared = Shared {
        work,
        map,
        tree,
        lists: lists.into_iter().map(Mutex::new).collect(),
        players: states.iter().map(SharedPlayer::new).collect(),
        net: states.iter().map(|_| SharedNet::default()).collect(),
        items: map.items().iter().map(|_| AtomicI32::new(0)).collect(),
        launches: Mutex::new(Vec::new()),
        frame: RwLock::new(ProjectileFrame::default()),
        barrier: Barrier::new(threads),
        tick: AtomicU32::new(0),
        stop: AtomicBool::new(false),
        measuring: AtomicBool::new(false),
        bytes: AtomicU64::new(0),
        entities: AtomicU64::new(0),
        hits: AtomicU64::new(0),
        kills: AtomicU64::new(0),
        lock_ns: AtomicU64::new(0),
        barrier_ns: AtomicU64::new(0),
        missed: AtomicU64::new(0),
        config,
    };
    let blocks: Vec<Range<usize>> = (0..threads)
        .map(|k| k * n / threads..(k + 1) * n / threads)
        .collect();
    // Worker k runs on the processor our pool's worker k gets; this thread is worker 0.
    let _pinned = pinning.pin_scoped(0)?;
    let mut out = std::thread::scope(|s| {
        for (k, block) in blocks.iter().enumerate().skip(1) {
            let (sh, block) = (&shared, block.clone());
            s.spawn(move || {
                pinning.pin_worker(k, "region-lock");
                Worker::new(sh, block).run(None)
            });
        }
        let mut out = RunOutcome {
            players: n,
            ..RunOutcome::default()
        };
        Worker::new(&shared, blocks[0].clone()).run(Some((plan, &mut out)));
        out
    });
    out.lock_wait_ns = shared.lock_ns.load(Relaxed);
    out.barrier_wait_ns = shared.barrier_ns.load(Relaxed);
    out.thread_ns = out.samples.iter().map(|s| s.total_ns).sum::<u64>() * threads as u64;
    anyhow::ensure!(
        shared.missed.load(Relaxed) == 0,
        "a query read a leaf it did not lock"
    );
    Ok(out)
}

/// One server thread and the players statically assigned to it.
struct Worker<'s> {
    shared: &'s Shared<'s>,
    block: Range<usize>,
    /// Node each of this thread's players is linked to.
    linked: Vec<u32>,
    clients: ClientTable,
    feeder: Feeder,
    cmds: Vec<Command>,
    mine: Vec<Vec<UserCmd>>,
    fx: Effects,
    boxes: Vec<Aabb>,
    leaves: Vec<u32>,
    one: Vec<u32>,
    interest: InterestScratch,
    lock_wait: Cell<u64>,
    barrier_wait: u64,
}

impl<'s> Worker<'s> {
    fn new(shared: &'s Shared<'s>, block: Range<usize>) -> Worker<'s> {
        let linked = block
            .clone()
            .map(|g| shared.tree.node_for(&shared.players[g].load().bbox()))
            .collect();
        Worker {
            shared,
            linked,
            clients: ClientTable::new(block.len(), shared.config.interest.max_entities),
            feeder: Feeder::new(block.clone()),
            cmds: Vec::new(),
            mine: vec![Vec::new(); block.len()],
            block,
            fx: Effects::default(),
            boxes: Vec::new(),
            leaves: Vec::new(),
            one: Vec::new(),
            interest: InterestScratch::default(),
            lock_wait: Cell::new(0),
            barrier_wait: 0,
        }
    }

    fn wait(&mut self) {
        let t = Instant::now();
        self.shared.barrier.wait();
        self.barrier_wait += t.elapsed().as_nanos() as u64;
    }

    /// The frame loop; the master (`Some`) also runs world physics and records the samples.
    fn run(mut self, mut master: Option<(&RunPlan, &mut RunOutcome)>) {
        let sh = self.shared;
        let mut measured_start: Option<Instant> = None;
        loop {
            let mut t0 = Instant::now();
            if let Some((plan, _)) = &master {
                let tick = sh.tick.load(Relaxed) + 1;
                let measuring = tick > plan.warmup;
                if measuring {
                    let start = *measured_start.get_or_insert_with(Instant::now);
                    sh.stop
                        .store(plan.done(tick - plan.warmup - 1, start.elapsed()), Relaxed);
                }
                sh.measuring.store(measuring, Relaxed);
                sh.tick.store(tick, Relaxed);
                t0 = Instant::now();
            }
            self.wait();
            // The master changes these only before the first barrier of a frame.
            if sh.stop.load(Relaxed) {
                break;
            }
            let (tick, measuring) = (sh.tick.load(Relaxed), sh.measuring.load(Relaxed));
            if master.is_some() {
                self.physics();
            }
            let t1 = Instant::now();
            self.wait();
            self.requests(tick);
            self.wait();
            let t2 = Instant::now();
            self.replies(tick);
            self.wait();
            let t3 = Instant::now();
            if measuring {
                sh.lock_ns.fetch_add(self.lock_wait.get(), Relaxed);
                sh.barrier_ns.fetch_add(self.barrier_wait, Relaxed);
            }
            self.lock_wait.set(0);
            self.barrier_wait = 0;
            if let Some((_, out)) = &mut master {
                // Every thread added its frame totals before the last barrier.
                let (bytes, entities) = (sh.bytes.swap(0, Relaxed), sh.entities.swap(0, Relaxed));
                let (hits, kills) = (sh.hits.swap(0, Relaxed), sh.kills.swap(0, Relaxed));
                if measuring {
                    let ns =
                        |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
                    out.samples.push(TickSample {
                        total_ns: ns(t0, t3),
                        phase_ns: [ns(t0, t1), ns(t1, t2), 0, ns(t2, t3)],
                        bytes,
                        entities,
                        ..TickSample::default()
                    });
                    out.hits += hits;
                    out.kills += kills;
                }
            }
        }
    }

    /// P: the master advances rockets and items alone (the others wait at the barrier).
    fn physics(&mut self) {
        let sh = self.shared;
        let (map, rules) = (sh.map, &sh.config.rules);
        let mut frame = sh.frame.write().unwrap_or_else(PoisonError::into_inner);
        let flying = std::mem::take(&mut frame.list);
        let view = TreeView(Locked {
            shared: sh,
            held: &[],
            brief_all: true,
            waited: &self.lock_wait,
        });
        for rocket in &flying {
            self.fx.hits.clear();
            frame
                .list
                .extend(rocket.advance(TICK_MS as i32, map, &view, rules, &mut self.fx.hits));
            for h in &self.fx.hits {
                apply_remote_hit(sh, h);
            }
        }
        for t in &sh.items {
            let left = t.load(Relaxed);
            if left > 0 {
                t.store((left - TICK_MS as i32).max(0), Relaxed);
            }
        }
        let mut launches = std::mem::take(&mut *lock(&sh.launches, &self.lock_wait));
        launches.sort_by_key(|l| (l.owner, l.order));
        let next = frame.list.iter().map(|p| p.id + 1).max().unwrap_or(0);
        for (k, l) in launches.iter().enumerate() {
            frame
                .list
                .push(Projectile::launched(next + k as u32, l, rules));
        }
        frame.refile(&sh.tree);
    }

    /// Rx/E: this thread's players' commands, each under its region locks.
    fn requests(&mut self, tick: u32) {
        let sh = self.shared;
        if let Some(t) = tick.checked_sub(ACK_DELAY).filter(|&t| t > 0) {
            for k in 0..self.block.len() {
                if acked(self.block.start + k, t) {
                    self.clients.ack(k, t);
                }
            }
        }
        self.cmds.clear();
        self.feeder.fill(&sh.work.actions, tick, &mut self.cmds);
        self.mine.iter_mut().for_each(Vec::clear);
        for c in &self.cmds {
            self.mine[c.player.0 as usize - self.block.start].push(c.cmd);
        }
        for k in 0..self.block.len() {
            let cmds = std::mem::take(&mut self.mine[k]);
            self.player(k, &cmds);
            self.mine[k] = cmds;
        }
        // Damage from other threads may still land until the barrier, as in the seed; the wire
        // state is taken from the player as this thread leaves it.
        for g in self.block.clone() {
            sh.net[g].store(&NetEntity::of_player(&sh.players[g].load()));
        }
    }

    fn lock_area(&mut self, areas: &[Aabb]) -> Held<'s> {
        let sh = self.shared;
        let mut leaves = std::mem::take(&mut self.leaves);
        leaves.clear();
        for a in areas {
            sh.tree.leaves(a, &mut self.one);
            leaves.extend_from_slice(&self.one);
        }
        leaves.sort_unstable();
        leaves.dedup();
        let held = leaves
            .iter()
            .map(|&l| (l, lock(&sh.lists[l as usize], &self.lock_wait)))
            .collect();
        self.leaves = leaves;
        held
    }

    fn player(&mut self, k: usize, cmds: &[UserCmd]) {
        let sh = self.shared;
        let (map, rules) = (sh.map, &sh.config.rules);
        let g = self.block.start + k;
        let before = sh.players[g].load();
        let mut held = self.lock_area(&[before.bbox()]);
        let mut p = sh.players[g].load();
        let active = begin_tick(&mut p, TICK_MS as i32, map, rules);
        if p.origin != before.origin {
            // Respawned far away: relink under the locks of both places.
            drop(held);
            held = self.lock_area(&[before.bbox(), p.bbox()]);
            let mut p2 = sh.players[g].load();
            begin_tick(&mut p2, TICK_MS as i32, map, rules);
            p = p2;
        }
        self.relink(k, &p, &mut held);
        sh.players[g].store(&p);
        drop(held);
        if !active {
            return;
        }
        let mut budget = rules.max_command_ms_per_tick as i32;
        for cmd in cmds {
            let Some(cmd) = clip_command(cmd, &mut budget) else {
                break;
            };
            let area = move_area(&sh.players[g].load(), cmd.msec, rules);
            let mut held = self.lock_area(&[area]);
            let mut p = sh.players[g].load();
            let hitscan;
            {
                let view = TreeView(Locked {
                    shared: sh,
                    held: &held,
                    brief_all: false,
                    waited: &self.lock_wait,
                });
                self.boxes.clear();
                view.boxes_near(&area, p.id, &mut self.boxes);
                pmove(&mut p, &cmd, map, &self.boxes, rules);
                hitscan = will_fire(&p, &cmd) == Some(Weapon::MachineGun);
                self.fx.clear();
                if !hitscan {
                    fire(&mut p, &cmd, map, &view, rules, &mut self.fx);
                }
                touch_items(&p, map, rules, &view, &mut self.fx, 0);
            }
            for c in &self.fx.claims {
                let timer = &sh.items[c.item as usize];
                let spot = map.items()[c.item as usize];
                let mut it = ItemState {
                    kind: spot.kind,
                    origin: spot.origin,
                    respawn_ms: timer.load(Relaxed),
                };
                if it.available() {
                    it.give(&mut p, rules);
                    timer.store(it.respawn_ms, Relaxed);
                }
            }
            self.relink(k, &p, &mut held);
            sh.players[g].store(&p);
            drop(held);
            if hitscan {
                self.shoot(g, &cmd);
            }
            if !self.fx.launches.is_empty() {
                lock(&sh.launches, &self.lock_wait).append(&mut self.fx.launches);
            }
            if !sh.players[g].load().alive() {
                break;
            }
        }
    }

    /// A hitscan shot under a directional lock: every leaf from the eye to the end of the
    /// weapon's range, clipped to the map.
    fn shoot(&mut self, g: usize, cmd: &UserCmd) {
        let sh = self.shared;
        let (map, rules) = (sh.map, &sh.config.rules);
        let aim = sh.players[g].load();
        let eye = aim.eye();
        let (dir, _) = view_vectors(aim.yaw, aim.pitch);
        let b = map.bounds();
        let end = (eye + dir * rules.hitscan_range).max(b.min).min(b.max);
        let area = Aabb::new(eye.min(end), eye.max(end)).expanded(PLAYER_HALF);
        let held = self.lock_area(&[area]);
        let mut p = sh.players[g].load();
        self.fx.clear();
        {
            let view = TreeView(Locked {
                shared: sh,
                held: &held,
                brief_all: false,
                waited: &self.lock_wait,
            });
            fire(&mut p, cmd, map, &view, rules, &mut self.fx);
        }
        sh.players[g].store(&p);
        for h in &self.fx.hits {
            apply_remote_hit(sh, h);
        }
        drop(held);
    }

    /// Moves player `k`'s link if its box now belongs to another node.
    fn relink(&mut self, k: usize, p: &PlayerState, held: &mut Held<'s>) {
        let sh = self.shared;
        let node = sh.tree.node_for(&p.bbox());
        let old = self.linked[k];
        if node == old {
            return;
        }
        let id = p.id.0;
        self.edit_list(old, held, |l| {
            if let Some(i) = l.iter().position(|&j| j == id) {
                l.swap_remove(i);
            }
        });
        self.edit_list(node, held, |l| l.push(id));
        self.linked[k] = node;
    }

    fn edit_list(&self, node: u32, held: &mut Held<'s>, f: impl FnOnce(&mut Vec<u32>)) {
        if let Ok(i) = held.binary_search_by_key(&node, |h| h.0) {
            f(&mut held[i].1);
        } else if self.shared.tree.nodes[node as usize].split.is_some() {
            f(&mut lock(
                &self.shared.lists[node as usize],
                &self.lock_wait,
            ));
        } else {
            // The move's box covers its start and end, so this cannot happen; blocking here
            // could deadlock, so count it and let the run fail loudly instead.
            self.shared.missed.fetch_add(1, Relaxed);
        }
    }

    /// T/Tx: a reply per client of this thread (read-only; node lists are read under brief,
    /// uncontended locks because safe Rust has no unlocked read of a mutex).
    fn replies(&mut self, tick: u32) {
        let sh = self.shared;
        let frame = sh.frame.read().unwrap_or_else(PoisonError::into_inner);
        let ctx = ReplyCtx {
            map: sh.map,
            cfg: &sh.config.interest,
            tree: &sh.tree,
            projectiles: &frame,
        };
        let (mut bytes, mut entities) = (0, 0);
        let waited = &self.lock_wait;
        let mut players_in = |node: u32, f: &mut dyn FnMut(NetEntity)| {
            for &j in lock(&sh.lists[node as usize], waited).iter() {
                f(sh.net[j as usize].load());
            }
        };
        let item = |i: u32| {
            let spot = sh.map.items()[i as usize];
            ItemState {
                kind: spot.kind,
                origin: spot.origin,
                respawn_ms: sh.items[i as usize].load(Relaxed),
            }
        };
        let mut src = ReplySources {
            players_in: &mut players_in,
            player: &|id| sh.net[id as usize].load(),
            item: &item,
        };
        for k in 0..self.block.len() {
            let viewer = sh.players[self.block.start + k].load();
            let (b, e) = reply(
                &viewer,
                tick,
                &mut self.clients,
                k,
                &ctx,
                &mut src,
                &mut self.interest,
            );
            bytes += b;
            entities += e;
        }
        sh.bytes.fetch_add(bytes, Relaxed);
        sh.entities.fetch_add(entities, Relaxed);
    }
}

/// Applies damage to another thread's player at once (the seed's immediate update).
fn apply_remote_hit(sh: &Shared<'_>, h: &metafi_world::intent::Hit) {
    let target = &sh.players[h.target.0 as usize];
    let mut t = target.load();
    let killer = apply_hit(&mut t, h, &sh.config.rules);
    target.store(&t);
    sh.hits.fetch_add(1, Relaxed);
    if let Some(a) = killer {
        let attacker = &sh.players[a.0 as usize];
        let mut s = attacker.load();
        s.frags += 1;
        attacker.store(&s);
        sh.kills.fetch_add(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use metafi_world::bots::Behaviour;

    use super::*;
    use crate::workload::MapKind;

    #[test]
    fn region_lock_server_runs_a_crowded_arena_without_missing_a_lock() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
        let work = Workload::build(MapKind::Arena, 96, Behaviour::Hunt, &pool).expect("workload");
        let plan = RunPlan {
            warmup: 5,
            min_ticks: 40,
            max_ticks: 40,
            max_wall: Duration::ZERO,
        };
        // Unpinned: tests run side by side, and three workers share whatever processors exist.
        let pinning = Pinning::new(false).expect("no pinning");
        let out = run(&work, 3, &plan, &pinning).expect("every query held the leaves it read");
        assert_eq!(out.samples.len(), 40);
        assert!(out.hits > 0, "the bots fought");
        assert!(out.samples.iter().all(|s| s.bytes > 0));
    }
}
