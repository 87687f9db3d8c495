//! The latency objective with a fake clock and synthetic costs (a tick "takes" time by moving
//! the fake clock): placement by measured cost, admission past the CPU and lateness objectives,
//! an expensive match stretched so its neighbours keep their objective.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use metafi_match::testing::{ScriptedMatch, SeedMatch, join_request, presence};
use metafi_match::{
    Dispatcher, FakeClock, Flow, HandlerError, JoinOutcome, JoinRequest, JoinVerdict, ListQuery,
    MatchConfig, MatchContext, MatchError, MatchHandler, MatchId, MatchInit, MatchMessage,
    MatchSpec, MatchStatsSnapshot, Objective, Params, Placement, Presence, PresenceReason,
};
use metafi_proto::Code;
use parking_lot::Mutex;
use support::{Engine, costing, spec};

/// A match of `name` at `rate` ticks per second whose every tick takes `cost` (of fake time).
fn costly(
    engine: &mut Engine,
    name: &str,
    rate: u32,
    cost: Duration,
) -> Result<MatchId, MatchError> {
    let (handler, _) = costing(&engine.clock, rate, cost, None);
    engine.try_create(spec(name, handler))
}

/// A match whose tick cost the test changes while it runs.
fn variable(clock: &Arc<FakeClock>, rate: u32, cost: &Arc<Mutex<Duration>>) -> ScriptedMatch {
    let (clock, cost) = (clock.clone(), cost.clone());
    ScriptedMatch::new(rate, move |_, _, _, _| {
        clock.advance(*cost.lock());
        Ok(Flow::Continue)
    })
    .0
}

fn config(threads: usize, objective: Objective) -> MatchConfig {
    MatchConfig {
        executor_threads: threads,
        objective,
        ..MatchConfig::default()
    }
}

/// [`config`] with every match created at one instant ticking at the same instants (phases
/// not spread): what a thread whose every millisecond already holds ticks does, with fewer
/// matches than that takes.
fn stacked_config(threads: usize, objective: Objective) -> MatchConfig {
    MatchConfig {
        spread_tick_phases: false,
        ..config(threads, objective)
    }
}

#[test]
fn a_new_match_goes_to_the_thread_with_the_most_headroom_not_the_fewest_matches() {
    for (placement, expected) in [
        (Placement::Cost, vec![1, 4]),
        (Placement::Count, vec![3, 2]),
    ] {
        let mut engine = Engine::new(config(
            2,
            Objective {
                placement,
                ..Objective::default()
            },
        ));
        // 4 ms × 50 ticks/s = 20 % of a core, on thread 0 (both empty: the first).
        let heavy = costly(&mut engine, "heavy", 50, Duration::from_millis(4)).unwrap();
        engine.run_for(Duration::from_secs(1));
        assert!((engine.stats(&heavy).cpu - 0.20).abs() < 1e-9);
        for _ in 0..4 {
            costly(&mut engine, "cheap", 10, Duration::from_micros(100)).unwrap();
            engine.run_for(Duration::from_millis(200));
        }
        let per_thread: Vec<usize> = engine.schedulers.iter().map(|s| s.len()).collect();
        assert_eq!(per_thread, expected, "{placement:?}");
    }
}

#[test]
fn admission_refuses_a_match_past_the_cpu_objective_and_says_so() {
    // Lateness is not what this test is about: a generous lateness objective.
    let mut engine = Engine::new(config(
        1,
        Objective {
            max_lateness: Duration::from_secs(1),
            ..Objective::default()
        },
    ));
    // Each match: 1 ms × 100 ticks/s = 10 % of the core; 7 fit under 75 %, the 8th does not.
    let stop = Arc::new(AtomicBool::new(false));
    let (first, _) = costing(
        &engine.clock,
        100,
        Duration::from_millis(1),
        Some(stop.clone()),
    );
    engine.try_create(spec("ten", first)).unwrap();
    engine.run_for(Duration::from_millis(100));
    for _ in 0..6 {
        costly(&mut engine, "ten", 100, Duration::from_millis(1)).unwrap();
        engine.run_for(Duration::from_millis(100));
    }
    assert_eq!(
        engine.matches.load().full,
        None,
        "a new 0.02 % match still fits"
    );
    let load = engine.matches.load();
    assert!((load.cpu - 0.70).abs() < 1e-9, "{load:?}");
    let refused = costly(&mut engine, "ten", 100, Duration::from_millis(1)).unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    let text = refused.to_string();
    assert!(
        text.starts_with(
            "Node is full: a new match would take executor CPU past the objective of 75%"
        ),
        "{text}"
    );
    assert!(text.contains("costs 10.0%"), "{text}");
    assert_eq!(engine.matches.count(), 7);
    // A cheaper handler's match (projected at the default 0.02 %) still fits.
    costly(&mut engine, "tiny", 10, Duration::ZERO).unwrap();
    // One leaves: the next one fits again.
    stop.store(true, Ordering::Relaxed);
    engine.run_for(Duration::from_millis(20));
    assert_eq!(engine.matches.count(), 7);
    costly(&mut engine, "ten", 100, Duration::from_millis(1)).unwrap();
}

/// A match whose ticks vary around their mean, as a script VM's do (its garbage collector,
/// its messages): 0.2 ms three times, then 1.4 ms (of the fake clock), at 100 ticks/s: 0.5 ms a
/// tick on average, 5 % of the core.
fn noisy(clock: &Arc<FakeClock>) -> ScriptedMatch {
    let clock = clock.clone();
    ScriptedMatch::new(100, move |_, _, tick, _| {
        let took = if tick % 4 == 3 { 1_400 } else { 200 };
        clock.advance(Duration::from_micros(took));
        Ok(Flow::Continue)
    })
    .0
}

/// Issue 21: the engine counted JavaScript seed matches at 1.7-1.8 times the executor
/// thread's CPU, because a match's cost took every tick dearer than its average at once and
/// let cheaper ones pull it down by an eighth: the dearest ticks, not the mean. Seven matches
/// whose ticks vary (35 % of the core by the clock) are counted at their mean, and the node
/// takes an eighth; counted the old way (about 12 % each, 84 % in all) it was full past the
/// CPU objective with half the core idle.
#[test]
fn matches_whose_ticks_vary_cost_their_mean_and_the_node_takes_what_fits() {
    let mut engine = Engine::new(config(1, Objective::default()));
    for _ in 0..7 {
        let handler = noisy(&engine.clock);
        engine.try_create(spec("noisy", handler)).unwrap();
        engine.run_for(Duration::from_micros(1_300));
    }
    engine.run_for(Duration::from_secs(3));
    let load = engine.matches.load();
    assert!((load.cpu - 0.35).abs() < 0.05, "{load:?}");
    assert_eq!(load.full, None, "{load:?}");
    let handler = noisy(&engine.clock);
    engine.try_create(spec("noisy", handler)).unwrap();
}

#[test]
fn admission_refuses_while_the_threads_own_matches_make_ticks_late() {
    let mut engine = Engine::new(stacked_config(1, Objective::default()));
    // Five 1 ms matches due at the same instants: the last runs 4 ms late every tick; they use
    // 50 % of the core, so the lateness is theirs.
    for _ in 0..5 {
        costly(&mut engine, "stacked", 100, Duration::from_millis(1)).unwrap();
    }
    engine.run_for(Duration::from_secs(3));
    let load = engine.matches.load();
    assert_eq!(load.late_threads, 1, "{load:?}");
    let refused = costly(&mut engine, "stacked", 100, Duration::from_millis(1)).unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert!(
        refused
            .to_string()
            .starts_with("Node is full: tick lateness p99 is over the objective of 2 ms"),
        "{refused}"
    );

    // The same lateness with admission off: the match is placed.
    let mut open = Engine::new(stacked_config(
        1,
        Objective {
            admission: false,
            ..Objective::default()
        },
    ));
    for _ in 0..5 {
        costly(&mut open, "stacked", 100, Duration::from_millis(1)).unwrap();
    }
    open.run_for(Duration::from_secs(3));
    costly(&mut open, "stacked", 100, Duration::from_millis(1)).unwrap();
}

/// The seed's rush (issue 21) on a node whose executor thread is woken late by other work on
/// the machine (on one core at a rush: the IO threads' sign-ins, finder RPCs and joins): every
/// wait ends 3 ms after the tick it waited for fell due, so a quarter of the ticks are late past
/// the objective, while the thread's own matches (40 % of the core, over the floor that used to
/// excuse lateness) never keep a tick waiting for more than 1 ms. That lateness is not the
/// node's: it stays open and seats 200 finders arriving at 500 per second, none refused.
#[test]
fn a_rush_is_seated_while_other_work_wakes_the_executor_late() {
    let mut engine = Engine::new(config(1, Objective::default()));
    engine.wake_late = Duration::from_millis(3);
    // Four 1 ms matches at 100 ticks/s, due 2.5 ms apart.
    for _ in 0..4 {
        costly(&mut engine, "background", 100, Duration::from_millis(1)).unwrap();
        engine.run_for(Duration::from_micros(2_500));
    }
    engine.run_for(Duration::from_secs(3));
    let load = engine.matches.load();
    assert_eq!(
        (load.late_threads, load.late_threads_by_others),
        (0, 1),
        "late, but not by its own matches: {load:?}"
    );
    assert!((load.cpu - 0.40).abs() < 1e-9, "{load:?}");
    assert_eq!(load.full, None, "{load:?}");

    let seed = || {
        spec(
            "seed",
            SeedMatch {
                tick_rate: 10,
                max_players: 10,
            },
        )
    };
    let outcomes = seat_rush(&mut engine, 200, seed);
    assert_all_seated(&outcomes);
    engine.run_for(Duration::from_secs(3));
    let seed_matches: Vec<_> = engine
        .matches
        .stats()
        .into_iter()
        .filter(|s| s.handler_name == "seed")
        .collect();
    assert_eq!(seed_matches.len(), 20);
    assert!(seed_matches.iter().all(|s| s.presences == 10));
    let load = engine.matches.load();
    assert_eq!(
        (load.late_threads, load.full.as_deref()),
        (0, None),
        "{load:?}"
    );
}

/// The stats of the matches of handler `name`.
fn stats_of(engine: &Engine, name: &str) -> Vec<MatchStatsSnapshot> {
    engine
        .matches
        .stats()
        .into_iter()
        .filter(|s| s.handler_name == name)
        .collect()
}

/// Every finder of a rush got a seat: none refused or failed.
fn assert_all_seated(outcomes: &[Result<JoinOutcome, MatchError>]) {
    let refused: Vec<_> = outcomes
        .iter()
        .filter(|o| !matches!(o, Ok(JoinOutcome::Accepted { .. })))
        .collect();
    assert!(
        refused.is_empty(),
        "{} of {} not seated, e.g. {:?}",
        refused.len(),
        outcomes.len(),
        refused[0]
    );
}

/// The seed's rush: `players` finders, ten every 20 ms (500 per second), each finding a seat
/// with `find_seat` (creating a match of `seed()` when none has room), joining it and
/// completing the join. Returns each finder's outcome once all have answered.
fn seat_rush(
    engine: &mut Engine,
    players: usize,
    seed: impl Fn() -> MatchSpec,
) -> Vec<Result<JoinOutcome, MatchError>> {
    let open = ListQuery {
        limit: 10,
        authoritative: Some(true),
        max_size: Some(9),
        ..ListQuery::default()
    };
    let players: Vec<_> = (0..players).map(|i| presence(&format!("p{i}"))).collect();
    let mut finders = Vec::new();
    let mut outcomes = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    let mut poll = |finders: &mut Vec<Pin<Box<dyn Future<Output = _>>>>, outcomes: &mut Vec<_>| {
        finders.retain_mut(|f| match f.as_mut().poll(&mut cx) {
            Poll::Ready(outcome) => {
                outcomes.push(outcome);
                false
            }
            Poll::Pending => true,
        });
    };
    for wave in players.chunks(10) {
        for p in wave {
            let (matches, p, open) = (engine.matches.clone(), p.clone(), open.clone());
            let seed = seed();
            finders.push(Box::pin(async move {
                let id = matches.find_seat(&open, p.user_id, 10, seed).await?;
                let outcome = matches.join(&id, join_request(&p)).await?;
                if matches!(outcome, JoinOutcome::Accepted { .. }) {
                    matches.complete_join(&id, p.session_id);
                }
                Ok::<_, MatchError>(outcome)
            }) as Pin<Box<dyn Future<Output = _>>>);
        }
        poll(&mut finders, &mut outcomes);
        engine.run_for(Duration::from_millis(20));
        poll(&mut finders, &mut outcomes);
    }
    for _ in 0..100 {
        if finders.is_empty() {
            break;
        }
        engine.run_for(Duration::from_millis(20));
        poll(&mut finders, &mut outcomes);
    }
    assert!(
        finders.is_empty(),
        "{} finders never answered",
        finders.len()
    );
    outcomes
}

/// The largest tick lateness of the matches of handler `name`, seconds.
fn max_lateness(engine: &Engine, name: &str) -> f64 {
    stats_of(engine, name)
        .iter()
        .map(|s| s.max_lateness_seconds)
        .fold(0.0, f64::max)
}

/// The node uses `cpu` of its one core, no thread is late and it takes new matches.
fn assert_open_at(engine: &Engine, cpu: f64) {
    let load = engine.matches.load();
    assert!((load.cpu - cpu).abs() < 1e-9, "{load:?}");
    assert_eq!(
        (load.late_threads, load.full.as_deref()),
        (0, None),
        "{load:?}"
    );
}

/// After a rush of 1,500 finders ([`seat_rush`] with [`costly_seed`]), the seed matches are
/// 150 full ones.
fn assert_rush_matches_full(engine: &mut Engine) {
    engine.run_for(Duration::from_secs(3));
    let seed_matches = stats_of(engine, "seed");
    assert_eq!(seed_matches.len(), 150);
    assert!(seed_matches.iter().all(|s| s.presences == 10));
}

/// The [`CostlySeed`] match on `engine`'s fake clock, as [`seat_rush`] makes one.
fn costly_seed(engine: &Engine) -> impl Fn() -> MatchSpec + use<> {
    let clock = engine.clock.clone();
    move || {
        spec(
            "seed",
            CostlySeed {
                seed: SeedMatch {
                    tick_rate: 10,
                    max_players: 10,
                },
                clock: clock.clone(),
            },
        )
    }
}

/// The seed match whose callbacks take time, as a script handler's do: `match_init` 2 ms,
/// each join attempt and join 0.3 ms (of the fake clock).
struct CostlySeed {
    seed: SeedMatch,
    clock: Arc<FakeClock>,
}

impl MatchHandler for CostlySeed {
    fn init(&mut self, ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError> {
        self.clock.advance(Duration::from_millis(2));
        self.seed.init(ctx, params)
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        self.clock.advance(Duration::from_micros(300));
        self.seed.join_attempt(ctx, d, tick, request)
    }

    fn join(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        self.clock.advance(Duration::from_micros(300));
        self.seed.join(ctx, d, tick, presences)
    }

    fn leave(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        self.seed.leave(ctx, d, tick, presences, reason)
    }

    fn tick(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        self.seed.tick(ctx, d, tick, messages)
    }

    fn terminate(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        self.seed.terminate(ctx, d, tick, grace_seconds)
    }

    fn signal(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        self.seed.signal(ctx, d, tick, data)
    }
}

/// The rush as it is with script handlers and phases spread (issue 21): the arrivals' own
/// work — `match_init` 2 ms, join attempts and joins 0.3 ms each, at 500 players per second
/// 40 % of the core — runs between the ticks of four 1 ms background matches (40 %, over the
/// floor that excuses lateness) and makes them late by more than the objective, a batch
/// every 20 ms, for 3 s: more than a lateness window. That lateness passes with the rush,
/// and refusing finders would only turn players away: all 1,500 are seated in 150 full
/// matches. (By the thread's whole own lateness it was full, and finders were refused.)
#[test]
fn a_rush_whose_lateness_is_the_arrivals_own_work_is_seated_in_full() {
    let mut engine = Engine::new(config(1, Objective::default()));
    for _ in 0..4 {
        costly(&mut engine, "background", 100, Duration::from_millis(1)).unwrap();
        engine.run_for(Duration::from_micros(2_500));
    }
    engine.run_for(Duration::from_secs(3));
    assert_open_at(&engine, 0.40);

    let seed = costly_seed(&engine);
    let late_before = max_lateness(&engine, "background");
    let outcomes = seat_rush(&mut engine, 1_500, seed);
    let background_late = max_lateness(&engine, "background");
    assert!(
        late_before < 0.002 && background_late > 0.004,
        "the rush's work makes the background ticks late: {late_before} s, then {background_late} s"
    );
    assert_all_seated(&outcomes);
    assert_rush_matches_full(&mut engine);
}

/// The rush's knock-on (issue 21: JavaScript at 8,000 players, 2,080-2,310 finders refused by
/// the lateness rule with the executor at a fifth of its core): a burst of arrivals holds
/// back the ticks that fall due while it runs, and those then run back to back; a tick due at
/// the end of the burst waits for the backlog, and by the work that ran its own lateness is
/// "ticks". Had the arrivals not come, those ticks would have run at their own due instants,
/// one a millisecond: it is the arrivals' lateness, and passes with them. A hundred 0.4 ms
/// background matches at 10 ticks/s (40 % of the core, over the floor that excuses lateness,
/// one tick due each millisecond) and 1,500 finders at 500/s whose seed matches take 2 ms to
/// start and 0.3 ms per join attempt and join (about 40 % more): every finder is seated.
/// (When the steady part was the own lateness less the arrivals' own pieces, the backlog
/// counted as the thread's steady work, the thread was full, and finders were refused.)
#[test]
fn ticks_a_rush_held_back_and_ran_back_to_back_are_the_rushs_lateness() {
    let mut engine = Engine::new(config(1, Objective::default()));
    for _ in 0..100 {
        costly(&mut engine, "background", 10, Duration::from_micros(400)).unwrap();
    }
    engine.run_for(Duration::from_secs(3));
    assert_open_at(&engine, 0.40);

    let seed = costly_seed(&engine);
    let outcomes = seat_rush(&mut engine, 1_500, seed);
    let background_late = max_lateness(&engine, "background");
    assert!(
        background_late > 0.004,
        "the rush holds ticks back: {background_late} s"
    );
    assert_all_seated(&outcomes);
    assert_rush_matches_full(&mut engine);
    let load = engine.matches.load();
    assert_eq!(
        (load.late_threads, load.full.as_deref()),
        (0, None),
        "{load:?}"
    );
}

/// A step whose ticks run past `FLUSH_EVERY` lets out what they sent, and on a one-core node
/// the IO threads that flush wakes take the core at once (here 3 ms each time). That wait is
/// not the next tick's: six 0.4 ms matches due together cost 4 % of the core each, and the
/// node takes a new match. (When the tick's start was marked
/// with the wall time read before the flush and the run delay read after it, the preemption
/// counted as the next tick's own time: that match cost 34 %.)
#[test]
fn a_preemption_after_a_flush_in_a_step_is_not_the_next_ticks_own_time() {
    let mut engine = Engine::new(stacked_config(1, Objective::default()));
    let ids: Vec<_> = (0..6)
        .map(|_| costly(&mut engine, "stacked", 100, Duration::from_micros(400)).unwrap())
        .collect();
    // From here on (a creation's steps flush too: preempted, they would not start together).
    engine
        .outlet
        .preempt_on_flush(engine.clock.clone(), Duration::from_millis(3));
    engine.run_for(Duration::from_secs(3));
    for id in &ids {
        let stats = engine.stats(id);
        assert!((stats.cpu - 0.04).abs() < 1e-9, "{stats:?}");
    }
    let load = engine.matches.load();
    assert!((load.cpu - 0.24).abs() < 1e-9, "{load:?}");
    assert_eq!(load.full, None, "{load:?}");
    costly(&mut engine, "stacked", 100, Duration::from_micros(400)).unwrap();
}

/// The rush's other half (issue 21): on a one-core node the IO threads (sign-ins, the finder
/// RPCs, joins) take the executor's core *while* it runs a batch of ticks. Ten 0.3 ms matches
/// at 100 ticks/s, due 1 ms apart, use 30 % of the core (over the floor that excuses lateness);
/// during every tick of the first one, the OS runs other threads for 4 ms. The next ticks start
/// up to 3.3 ms late — players feel it, and a fifth of the ticks break the objective — but the
/// thread did not spend that time: its own lateness stays under 1 ms, the preempted tick costs
/// its own 0.3 ms, and the node still takes matches. By the wall clock the thread was full
/// (its own lateness over the objective) and the first match cost 43 % of the core.
#[test]
fn a_thread_preempted_while_it_runs_its_ticks_is_not_full() {
    let mut engine = Engine::new(config(1, Objective::default()));
    let clock = engine.clock.clone();
    let preempted = ScriptedMatch::new(100, move |_, _, _, _| {
        clock.advance(Duration::from_micros(300));
        clock.preempt(Duration::from_millis(4));
        Ok(Flow::Continue)
    })
    .0;
    let first = engine.try_create(spec("background", preempted)).unwrap();
    engine.run_for(Duration::from_millis(1));
    let mut others = Vec::new();
    for _ in 0..9 {
        others.push(costly(&mut engine, "background", 100, Duration::from_micros(300)).unwrap());
        engine.run_for(Duration::from_millis(1));
    }
    engine.run_for(Duration::from_secs(3));

    let next = engine.stats(&others[0]);
    assert!(
        next.max_lateness_seconds > 0.003,
        "the lateness players feel is kept: {next:?}"
    );
    let load = engine.matches.load();
    assert_eq!(
        (load.late_threads, load.late_threads_by_others),
        (0, 1),
        "late, but not by its own work: {load:?}"
    );
    assert!((engine.stats(&first).cpu - 0.03).abs() < 1e-9, "{load:?}");
    assert!((load.cpu - 0.30).abs() < 1e-9, "{load:?}");
    assert_eq!(load.full, None, "{load:?}");
    costly(&mut engine, "background", 100, Duration::from_micros(300)).unwrap();
}

/// Ten cheap matches and one whose code goes from 1.5 ms to 15 ms a tick (10×) at 64 ticks/s:
/// 15.625 ms per interval cannot hold 15 ms plus the others. All due at the same instants, so
/// the heavy one runs after them; with their phases spread, the cheap ones due while a heavy
/// tick runs wait for it (stretching makes that rarer, not impossible: docs/MATCHES.md,
/// "Overload").
fn overload(stretch: bool) -> (Engine, Vec<MatchId>, MatchId) {
    let mut engine = Engine::new(stacked_config(
        1,
        Objective {
            stretch_overloaded: stretch,
            ..Objective::default()
        },
    ));
    let mut cheap = Vec::new();
    for _ in 0..10 {
        cheap.push(costly(&mut engine, "cheap", 64, Duration::from_micros(100)).unwrap());
    }
    let cost = Arc::new(Mutex::new(Duration::from_micros(1_500)));
    let handler = variable(&engine.clock, 64, &cost);
    let heavy = engine.try_create(spec("heavy", handler)).unwrap();
    engine.run_for(Duration::from_secs(1));
    *cost.lock() = Duration::from_millis(15);
    engine.run_for(Duration::from_secs(3));
    (engine, cheap, heavy)
}

#[test]
fn a_match_that_suddenly_costs_ten_times_more_slows_first_and_its_neighbours_keep_time() {
    let (engine, cheap, heavy) = overload(true);
    let h = engine.stats(&heavy);
    assert!(h.stretched_ticks > 0, "{h:?}");
    for id in &cheap {
        let s = engine.stats(id);
        assert!(s.max_lateness_seconds <= 0.002, "{s:?}");
        assert_eq!(s.skipped_ticks, 0, "{s:?}");
        assert_eq!(s.stretched_ticks, 0, "{s:?}");
        // 64 ticks a second for 4 seconds, every one run.
        assert!(s.ticks >= 4 * 64 - 1, "{s:?}");
    }
    assert!(
        engine.matches.load().cpu <= 0.75 + 1e-9,
        "{:?}",
        engine.matches.load()
    );

    // Without stretching the thread falls behind and the neighbours with it.
    let (engine, cheap, _) = overload(false);
    let late = cheap
        .iter()
        .map(|id| engine.stats(id))
        .filter(|s| s.max_lateness_seconds > 0.002 || s.skipped_ticks > 0)
        .count();
    assert!(late > 0, "without stretching the neighbours are late");
}

#[test]
fn concurrent_creations_reserve_their_cost_so_they_spread_and_stop_at_the_objective() {
    // Two threads, every new match projected at 10 % of a core (nothing measured yet): of 20
    // creations racing (all queued before any is placed on its thread), 7 fit on each thread
    // and the other 6 are refused, whatever the order.
    let mut engine = Engine::new(config(
        2,
        Objective {
            new_match_cpu_us: 100_000,
            ..Objective::default()
        },
    ));
    let matches = engine.matches.clone();
    let creations = (0..20)
        .map(|_| {
            let (handler, _) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
            matches.create(spec("racer", handler))
        })
        .collect();
    let results = engine.drive_all(creations);
    let created = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(created, 14, "{results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(refused.code(), Code::ResourceExhausted);
    }
    let per_thread: Vec<usize> = engine.schedulers.iter().map(|s| s.len()).collect();
    assert_eq!(per_thread, vec![7, 7]);
}
