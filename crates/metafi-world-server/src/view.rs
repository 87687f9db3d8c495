//! The world seen from above (the console's `/world/{id}` page, docs/CONSOLE.md "Worlds"):
//! while someone watches, the world thread keeps a whole-world snapshot every
//! `1000 / view_rate` ms — every player, rocket and item as the [`NetEntity`] records clients
//! get — and a viewer fetches it encoded with the same delta codec as a client's snapshot,
//! against the frame it already has (`since`), so a 5,000-player world costs a few KB per
//! frame once the first full frame arrived. Nobody watching costs one atomic load per tick.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use metafi_world::snapshot::{NetEntity, PlayerView, Snapshot};
use metafi_world::{Map, World, delta};
use parking_lot::Mutex;

/// Frames kept: a viewer whose last frame is older than this gets a full one.
const KEPT_FRAMES: usize = 8;
/// The world thread keeps making frames this long after the last fetch.
const WATCH_FOR: Duration = Duration::from_secs(3);

/// One world's overhead feed, shared by the world thread (writes frames) and viewers.
#[derive(Debug)]
pub struct WorldView {
    map: Arc<Map>,
    tick_rate: u32,
    /// Ticks between two frames (0: the view is off).
    every: u32,
    born: Instant,
    /// When a viewer last asked, in ms since `born` plus one (0: never).
    watched_ms: AtomicU64,
    frames: Mutex<VecDeque<Arc<Snapshot>>>,
}

impl WorldView {
    pub(crate) fn new(map: Arc<Map>, tick_rate: u32, view_rate: u32) -> WorldView {
        let every = if view_rate == 0 {
            0
        } else {
            (tick_rate / view_rate.min(tick_rate)).max(1)
        };
        WorldView {
            map,
            tick_rate,
            every,
            born: Instant::now(),
            watched_ms: AtomicU64::new(0),
            frames: Mutex::new(VecDeque::with_capacity(KEPT_FRAMES)),
        }
    }

    /// Whether the view is served (`world.view_rate` above 0).
    pub fn enabled(&self) -> bool {
        self.every > 0
    }

    /// Frames per second a viewer can expect.
    pub fn frame_rate(&self) -> f64 {
        if self.every == 0 {
            0.0
        } else {
            f64::from(self.tick_rate) / f64::from(self.every)
        }
    }

    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64 + 1
    }

    /// Called by the world thread after each tick: keeps a frame of `world` when someone
    /// watched recently and the tick is due.
    pub(crate) fn after_tick(&self, world: &World) {
        if self.every == 0 || !world.current_tick().is_multiple_of(self.every) {
            return;
        }
        let watched = self.watched_ms.load(Ordering::Relaxed);
        if watched == 0 || self.now_ms().saturating_sub(watched) > WATCH_FOR.as_millis() as u64 {
            return;
        }
        let frame = Arc::new(frame_of(world));
        let mut frames = self.frames.lock();
        if frames.len() == KEPT_FRAMES {
            frames.pop_front();
        }
        frames.push_back(frame);
    }

    /// The newest frame encoded against the frame of tick `since` when it is still kept
    /// (otherwise in full), or `None` when there is nothing newer than `since` (before the
    /// first frame too: the fetch also starts the frames). The packet is a snapshot packet of
    /// docs/WORLD.md's codec; its view is empty.
    pub fn frame(&self, since: Option<u32>) -> Option<Vec<u8>> {
        self.watched_ms.store(self.now_ms(), Ordering::Relaxed);
        let (base, newest) = {
            let frames = self.frames.lock();
            let newest = frames.back()?.clone();
            if since == Some(newest.tick) {
                return None;
            }
            let base = since.and_then(|t| frames.iter().find(|f| f.tick == t).cloned());
            (base, newest)
        };
        let mut out = Vec::new();
        delta::encode(base.as_deref(), &newest, &mut out);
        Some(out)
    }

    /// The map as the page draws it: bounds, brushes (x/y extents and top) and item spots.
    pub fn map_json(&self) -> serde_json::Value {
        let b = self.map.bounds();
        let brushes: Vec<[f32; 5]> = self
            .map
            .brushes()
            .iter()
            .map(|a| [a.min.x, a.min.y, a.max.x, a.max.y, a.max.z])
            .collect();
        serde_json::json!({
            "name": self.map.name(),
            "bounds": { "min": [b.min.x, b.min.y, b.min.z], "max": [b.max.x, b.max.y, b.max.z] },
            "brushes": brushes,
            "spawns": self.map.spawns().len(),
            "items": self.map.items().len(),
            "tick_rate": self.tick_rate,
            "frame_rate": self.frame_rate(),
        })
    }
}

/// Every entity of the world, as clients see entities, sorted by key.
fn frame_of(world: &World) -> Snapshot {
    let mut entities: Vec<NetEntity> =
        Vec::with_capacity(world.players().len() + world.projectiles().len() + world.items().len());
    entities.extend(world.players().iter().map(NetEntity::of_player));
    entities.extend(world.projectiles().iter().map(NetEntity::of_projectile));
    entities.extend(
        world
            .items()
            .iter()
            .enumerate()
            .map(|(i, it)| NetEntity::of_item(i as u32, it)),
    );
    entities.sort_unstable_by_key(|e| e.key);
    entities.dedup_by_key(|e| e.key);
    Snapshot {
        tick: world.current_tick(),
        view: PlayerView::default(),
        entities,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metafi_world::map_gen;
    use metafi_world::snapshot::{EntityKind, kind_of};
    use metafi_world::{Command, UserCmd, WorldConfig};

    fn decode_all(bytes: &[u8], base: Option<&Snapshot>) -> Snapshot {
        // The library's decoder caps a client's snapshot at 4096 entities; small worlds here.
        delta::decode(base, bytes).expect("a view frame decodes with the client codec")
    }

    #[test]
    fn frames_only_while_watched_and_deltas_against_what_the_viewer_has() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let map = Arc::new(Map::build(map_gen::arena(1), &pool).expect("map"));
        let mut world = World::new(map.clone(), WorldConfig::default()).expect("world");
        let players: Vec<_> = (0..20).map(|_| world.join().expect("join")).collect();
        let view = WorldView::new(map, 20, 10);
        assert!(view.enabled());
        assert_eq!(view.frame_rate(), 10.0);

        // Nobody asked yet: no frames are made.
        for t in 0..4 {
            world.tick(&pool, t * 50, &[]);
            view.after_tick(&world);
        }
        assert!(view.frame(None).is_none(), "no frame before anyone watched");

        let mut now = 200;
        let mut tick = |world: &mut World, n: u64| {
            for _ in 0..n {
                let cmds: Vec<Command> = players
                    .iter()
                    .map(|&p| Command {
                        player: p,
                        cmd: UserCmd {
                            msec: 50,
                            forward: 320,
                            ..UserCmd::default()
                        },
                    })
                    .collect();
                world.tick(&pool, now, &cmds);
                now += 50;
                view.after_tick(world);
            }
        };
        tick(&mut world, 2);
        let full = view.frame(None).expect("a frame once watched");
        assert_eq!(delta::baseline_tick(&full).expect("header"), None);
        let first = decode_all(&full, None);
        let kinds = |s: &Snapshot, k: EntityKind| {
            s.entities
                .iter()
                .filter(|e| kind_of(e.key) == k as u32)
                .count()
        };
        assert_eq!(kinds(&first, EntityKind::Player), 20, "every player");
        assert_eq!(kinds(&first, EntityKind::Item), world.items().len());

        tick(&mut world, 2);
        let delta_bytes = view.frame(Some(first.tick)).expect("frame");
        assert_eq!(
            delta::baseline_tick(&delta_bytes).expect("header"),
            Some(first.tick)
        );
        let second = decode_all(&delta_bytes, Some(&first));
        assert!(second.tick > first.tick);
        assert_eq!(kinds(&second, EntityKind::Player), 20);
        assert!(
            delta_bytes.len() < full.len(),
            "a delta ({}) is smaller than the full frame ({})",
            delta_bytes.len(),
            full.len()
        );
        // A frame the server no longer keeps: a full one.
        let unknown = view.frame(Some(1)).expect("frame");
        assert_eq!(delta::baseline_tick(&unknown).expect("header"), None);
        // Nothing newer than what the viewer has: nothing.
        assert!(view.frame(Some(second.tick)).is_none());
    }

    #[test]
    fn view_rate_zero_is_off() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let map = Arc::new(Map::build(map_gen::arena(1), &pool).expect("map"));
        let mut world = World::new(map.clone(), WorldConfig::default()).expect("world");
        let view = WorldView::new(map, 20, 0);
        assert!(!view.enabled());
        assert!(view.frame(None).is_none());
        for t in 0..4 {
            world.tick(&pool, t * 50, &[]);
            view.after_tick(&world);
        }
        assert!(view.frame(None).is_none());
    }
}
