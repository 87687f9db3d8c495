//! The configurations a run sweeps.

use std::time::Duration;

use metafi_world::bots::Behaviour;

use crate::measure::RunPlan;
use crate::workload::MapKind;

/// How the tick is scheduled and synchronised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sched {
    /// metafi-world: double-buffered phases over grid cells, work stealing, intents.
    Ours,
    /// The seed's sequential QuakeWorld loop.
    Sequential,
    /// The seed's parallel server: static player blocks, areanode region locks, barriers.
    RegionLocks,
}

impl Sched {
    pub fn name(self) -> &'static str {
        match self {
            Sched::Ours => "metafi-world",
            Sched::Sequential => "sequential",
            Sched::RegionLocks => "region-locks",
        }
    }
}

const ALL: &[Sched] = &[Sched::Ours, Sched::Sequential, Sched::RegionLocks];

/// One workload and the schedulers run on it.
#[derive(Clone, Debug)]
pub struct Config {
    pub suite: &'static str,
    pub map: MapKind,
    pub behaviour: Behaviour,
    pub players: usize,
    pub scheds: &'static [Sched],
    pub plan: RunPlan,
}

fn plan(quick: bool) -> RunPlan {
    if quick {
        RunPlan {
            warmup: 5,
            min_ticks: 15,
            max_ticks: 60,
            max_wall: Duration::from_millis(400),
        }
    } else {
        RunPlan {
            warmup: 10,
            min_ticks: 30,
            max_ticks: 400,
            max_wall: Duration::from_secs(3),
        }
    }
}

/// The sweep, in an order that reuses each workload for all its schedulers.
pub fn configs(quick: bool) -> Vec<Config> {
    let p = plan(quick);
    let mut out = Vec::new();
    let cfg = |suite, map, behaviour, players, scheds, plan: &RunPlan| Config {
        suite,
        map,
        behaviour,
        players,
        scheds,
        plan: plan.clone(),
    };
    let large: &[usize] = if quick {
        &[100, 1000]
    } else {
        &[100, 500, 1000, 2500, 5000, 10_000, 20_000]
    };
    for &n in large {
        out.push(cfg(
            "scale-large",
            MapKind::Large,
            Behaviour::Mixed,
            n,
            ALL,
            &p,
        ));
    }
    let arena: &[usize] = if quick {
        &[32, 128]
    } else {
        &[16, 32, 64, 128, 256, 512]
    };
    for &n in arena {
        out.push(cfg(
            "scale-arena",
            MapKind::Arena,
            Behaviour::Hunt,
            n,
            ALL,
            &p,
        ));
    }
    let (n, behaviours): (usize, &[Behaviour]) = if quick {
        (1000, &[Behaviour::Hunt, Behaviour::Converge])
    } else {
        (
            5000,
            &[
                Behaviour::Roam,
                Behaviour::Hunt,
                Behaviour::Camp,
                Behaviour::Converge,
            ],
        )
    };
    for &b in behaviours {
        out.push(cfg("behaviours", MapKind::Large, b, n, ALL, &p));
    }
    let target = if quick {
        RunPlan {
            warmup: 5,
            min_ticks: 30,
            max_ticks: 30,
            max_wall: Duration::ZERO,
        }
    } else {
        RunPlan {
            warmup: 20,
            min_ticks: 600,
            max_ticks: 600,
            max_wall: Duration::ZERO,
        }
    };
    let n = if quick { 2000 } else { 10_000 };
    out.push(cfg(
        "target",
        MapKind::Large,
        Behaviour::Mixed,
        n,
        &[Sched::Ours],
        &target,
    ));
    out
}
