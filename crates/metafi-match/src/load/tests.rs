//! The objective's bookkeeping, tested with synthetic clocks.

use super::*;

fn objective() -> Objective {
    Objective::default()
}

/// A tick's own lateness, all of it spent in other ticks.
fn in_ticks(own: Duration) -> impl FnOnce() -> OwnSplit {
    move || {
        let mut split = OwnSplit::default();
        split.by_work[Work::Tick.index()] = own;
        split.steady = own;
        split
    }
}

#[test]
fn a_match_costs_its_average_tick_times_its_rate() {
    let o = objective();
    let mut c = SlotCost::placed(5_000_000);
    let delta = c.tick(&o, Duration::from_micros(100), 64, 5_000_000, 1);
    assert_eq!(c.applied, 100_000 * 64);
    assert_eq!(delta, 100_000 * 64 - 5_000_000);
    // One dearer tick moves the average by an eighth of the difference, and so does a
    // cheaper one: the mean, not the dearest ticks.
    c.tick(&o, Duration::from_micros(900), 64, c.applied, 1);
    assert_eq!(c.applied, 200_000 * 64);
    c.tick(&o, Duration::from_micros(120), 64, c.applied, 1);
    assert_eq!(c.applied, 190_000 * 64);
    // Two ticks in a row over twice the average: the code got dearer, taken at once (the
    // cheaper of the two).
    c.tick(&o, Duration::from_micros(1_600), 64, c.applied, 1);
    assert_eq!(c.applied, 366_250 * 64);
    c.tick(&o, Duration::from_micros(1_900), 64, c.applied, 1);
    assert_eq!(c.applied, 1_600_000 * 64);
    assert_eq!(c.stretch, 0);
}

/// Ticks that vary around their mean (a script VM's: its garbage collector, its messages):
/// 0.2 ms three times, then 1.4 ms, mean 0.5 ms. The match costs about its mean, as the
/// thread's CPU does; taking every dearer tick at once (the rule before) counted it at 2.3
/// times that (1.0-1.4 ms a tick).
#[test]
fn a_match_whose_ticks_vary_costs_their_mean_not_the_dearest() {
    let o = objective();
    let mut c = SlotCost::placed(0);
    let mut applied = Vec::new();
    for i in 0..400 {
        let took = if i % 4 == 3 { 1_400 } else { 200 };
        c.tick(&o, Duration::from_micros(took), 100, c.applied, 1);
        if i >= 200 {
            applied.push(c.applied);
        }
    }
    let mean = applied.iter().sum::<i64>() / applied.len() as i64;
    let (low, high) = (applied.iter().min(), applied.iter().max());
    // 0.5 ms × 100/s = 5 % of a core; the average swings by an eighth of 0.9 ms after a dear
    // tick.
    assert!(
        (45_000_000..=55_000_000).contains(&mean),
        "{mean} ({low:?}-{high:?})"
    );
    assert!(high <= Some(&65_000_000), "{low:?}-{high:?}");
}

#[test]
fn an_expensive_match_on_a_full_thread_is_stretched_to_fit() {
    let o = objective();
    // Others use 50 % of the core; this match needs 5 ms × 100/s = 50 %: 25 % fits.
    let mut c = SlotCost::placed(0);
    c.tick(&o, Duration::from_millis(5), 100, 500_000_000, 10);
    assert_eq!(c.stretch, 1, "every other slot");
    assert_eq!(c.applied, 250_000_000);
    // The others leave: it runs at full rate again.
    c.tick(&o, Duration::from_millis(5), 100, c.applied, 1);
    assert_eq!(c.stretch, 0);
    // Stretching off: never stretched.
    let o = Objective {
        stretch_overloaded: false,
        ..objective()
    };
    c.tick(&o, Duration::from_millis(5), 100, 900_000_000, 10);
    assert_eq!(c.stretch, 0);
}

#[test]
fn windows_judge_lateness_at_the_99th_percentile() {
    let o = objective();
    let shared = ThreadLoad::default();
    let mut w = Window::default();
    let t0 = Instant::now();
    for i in 0..200u64 {
        let late = if i < 2 {
            Duration::from_millis(3)
        } else {
            Duration::ZERO
        };
        w.record(
            &o,
            &shared,
            t0 + Duration::from_millis(i),
            late,
            Duration::ZERO,
            in_ticks(late),
        );
    }
    let zero = Duration::ZERO;
    w.record(
        &o,
        &shared,
        t0 + Duration::from_secs(3),
        zero,
        Duration::ZERO,
        in_ticks(zero),
    );
    assert!(!shared.late(), "2 of 200 late is the 99th percentile");
    for i in 0..200u64 {
        let late = if i < 3 {
            Duration::from_millis(3)
        } else {
            Duration::ZERO
        };
        w.record(
            &o,
            &shared,
            t0 + Duration::from_secs(3) + Duration::from_millis(i),
            late,
            Duration::ZERO,
            in_ticks(late),
        );
    }
    w.record(
        &o,
        &shared,
        t0 + Duration::from_secs(6),
        zero,
        Duration::ZERO,
        in_ticks(zero),
    );
    assert!(shared.late(), "3 of 201 late breaks it");
}

/// The clocks at `wall` after the thread waited `run_delay` for its core in all.
fn mark(wall: Instant, run_delay: Duration) -> Mark {
    Mark { wall, run_delay }
}

#[test]
fn lateness_while_the_thread_waited_is_not_its_own() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    // Asleep when the tick fell due at t0, woken 5 ms late (of which 1 ms it was runnable
    // and waited for its core), started at once: none is its own.
    let mut own = OwnTime::new(mark(t0 - ms(10), ms(7)));
    own.woke(mark(t0 + ms(5), ms(8)));
    assert_eq!(own.own_lateness(t0, mark(t0 + ms(5), ms(8))), ms(0));
    // Woken 5 ms late, then 3 ms of earlier ticks and callbacks: those 3 ms are its own.
    assert_eq!(own.own_lateness(t0, mark(t0 + ms(8), ms(8))), ms(3));
    // Busy since before the tick fell due (woke at t0 - 1 ms): all 4 ms are its own.
    let mut own = OwnTime::new(mark(t0 - ms(1), ms(8)));
    own.mark(mark(t0 - ms(1), ms(8)), Work::Tick);
    assert_eq!(own.own_lateness(t0, mark(t0 + ms(4), ms(8))), ms(4));
    // Woken on time.
    own.woke(mark(t0, ms(8)));
    assert_eq!(own.own_lateness(t0, mark(t0 + ms(1), ms(8))), ms(1));
}

/// The batch the wall clock blamed on the thread (issue 21): woken on time at t0, it runs a
/// 0.2 ms tick, then the IO threads hold its core for 5 ms; the ticks that fell due
/// meanwhile start ~5 ms late, but the thread's own time since they fell due is its 0.2 ms
/// tick (and the ticks before each one).
#[test]
fn time_the_thread_waited_for_its_core_in_a_batch_is_not_its_own() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    let mut own = OwnTime::new(mark(t0 - us(50_000), us(1_000)));
    own.woke(mark(t0, us(1_000)));
    own.mark(mark(t0, us(1_000)), Work::Tick); // the step
    own.mark(mark(t0, us(1_000)), Work::Tick); // tick 1, due at t0
    // Tick 2 was due at t0 + 1 ms and starts at t0 + 5.2 ms: 4.2 ms late by the wall, of
    // which 0.2 ms (tick 1) the thread's own since its last mark before the due instant.
    let tick2 = mark(t0 + us(5_200), us(6_000));
    assert_eq!(own.own_lateness(t0 + us(1_000), tick2), us(200));
    // The wall clock alone (the old rule) called all 4.2 ms its own: over the objective of
    // 2 ms, so this thread counted as full.
    assert!(Objective::default().max_lateness < us(4_200));
    own.mark(tick2, Work::Tick);
    // Tick 3, due at t0 + 2 ms, starts after tick 2 (0.2 ms more): 0.4 ms its own.
    let tick3 = mark(t0 + us(5_400), us(6_000));
    assert_eq!(own.own_lateness(t0 + us(2_000), tick3), us(400));
    // A tick due after tick 2 started is charged from tick 2's mark, at most the wall time.
    assert_eq!(own.own_lateness(t0 + us(5_300), tick3), us(100));
}

/// A thread that really spends its time on its matches — running them, or blocked in a
/// callback that waits (a sleeping native tick, an `nk` call waiting for storage): woken
/// on time, 3 ms of ticks before a tick due at the wake-up. All of it is its own.
#[test]
fn time_the_thread_spends_in_its_matches_is_its_own() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut own = OwnTime::new(mark(t0, ms(0)));
    own.woke(mark(t0, ms(10)));
    own.mark(mark(t0, ms(10)), Work::Tick);
    for i in 0..3 {
        own.mark(mark(t0 + ms(i), ms(10)), Work::Tick);
    }
    assert_eq!(own.own_lateness(t0, mark(t0 + ms(3), ms(10))), ms(3));
    // More marks than it keeps (a thread that never waits): an older due instant is
    // charged from the wake-up, never from a later mark (that would understate it).
    for i in 0..(MARKS as u64 * 2) {
        own.mark(mark(t0 + ms(3 + i), ms(10)), Work::Tick);
    }
    let end = 3 + MARKS as u64 * 2;
    assert_eq!(
        own.own_lateness(t0 + ms(1), mark(t0 + ms(end), ms(12))),
        ms(end - 2),
        "from the wake-up: the wall time since, less the 2 ms it waited for its core"
    );
}

/// A burst of arrivals holds ticks back, and they run back to back after it (issue 21, the
/// rush at 8,000 JavaScript players): woken at t0, the thread decides join attempts for 5 ms
/// while ticks fall due each millisecond from t0 + 1 ms, then runs them, 0.6 ms each. The
/// tick due at t0 + 5 ms starts 2.4 ms late, all of it (by the work that ran) other ticks;
/// but without the arrivals each tick would have run at its due instant, so none of it is
/// steady lateness. Five ticks due together at t0, 0.6 ms each, stack: the fifth's 2.4 ms is.
#[test]
fn ticks_held_back_by_arrivals_are_not_steady_lateness() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    let zero = Duration::ZERO;
    let mut own = OwnTime::new(mark(t0, zero));
    own.woke(mark(t0, zero));
    own.mark(mark(t0, zero), Work::Mailbox);
    own.mark(mark(t0, zero), Work::JoinAttempt);
    own.mark(mark(t0 + us(5_000), zero), Work::Other);
    let mut split = OwnSplit::default();
    for i in 0..5u64 {
        let due = t0 + us(1_000 * (i + 1));
        let started = mark(t0 + us(5_000 + 600 * i), zero);
        split = own.own_split(due, started);
        assert_eq!(split.steady(), zero, "tick {i}: {split:?}");
        own.mark_tick(started, due);
    }
    assert_eq!(split.of(Work::Tick), us(2_400), "{split:?}");
    assert_eq!(split.total(), us(2_400), "{split:?}");

    let mut own = OwnTime::new(mark(t0, zero));
    own.woke(mark(t0, zero));
    own.mark(mark(t0, zero), Work::Other);
    for i in 0..5u64 {
        let started = mark(t0 + us(600 * i), zero);
        split = own.own_split(t0, started);
        assert_eq!(split.steady(), us(600 * i), "{split:?}");
        own.mark_tick(started, t0);
    }
}

/// What kept a late tick waiting, by work: woken on time at t0, the thread starts a match
/// (`match_init`, 3 ms, of which the OS ran others for 0.5 ms), decides a join attempt
/// (0.4 ms) and runs a tick (1 ms, 0.5 ms of it preempted); a tick due at t0 + 1 ms starts
/// at t0 + 4.4 ms. Its own lateness is 3.4 ms: the start's 2.5 ms (begun before the due
/// instant, so counted whole: the rule's safe side), the join attempt and the tick's own
/// 0.5 ms.
#[test]
fn a_late_ticks_own_lateness_is_split_by_the_work_that_ran() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    let mut own = OwnTime::new(mark(t0, us(0)));
    own.woke(mark(t0, us(0)));
    own.mark(mark(t0, us(0)), Work::Start);
    own.mark(mark(t0 + us(3_000), us(500)), Work::JoinAttempt);
    own.mark(mark(t0 + us(3_400), us(500)), Work::Tick);
    let started = mark(t0 + us(4_400), us(1_000));
    let split = own.own_split(t0 + us(1_000), started);
    assert_eq!(split.of(Work::Start), us(2_500));
    assert_eq!(split.of(Work::JoinAttempt), us(400));
    assert_eq!(split.of(Work::Tick), us(500), "1 ms, less 0.5 ms preempted");
    assert_eq!(split.total(), us(3_400));
    // Never more than the wall time since the tick fell due: a 3 ms start begun 2 ms
    // before it, then a 1 ms tick, count 1 ms and 1 ms (the excess is off the first piece).
    let mut own = OwnTime::new(mark(t0, us(0)));
    own.mark(mark(t0, us(0)), Work::Start);
    own.mark(mark(t0 + us(3_000), us(0)), Work::Tick);
    let split = own.own_split(t0 + us(2_000), mark(t0 + us(4_000), us(0)));
    assert_eq!(
        (split.of(Work::Start), split.of(Work::Tick)),
        (us(1_000), us(1_000))
    );
}

#[test]
fn a_thread_woken_late_is_late_by_others_and_not_full() {
    let o = objective();
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    // Every tick 5 ms late, of which 1 ms its own: the window breaks the objective, but not
    // by the thread's own lateness.
    let woken_late = ThreadLoad::default();
    let mut w = Window::default();
    let mut causes = Vec::new();
    for i in 0..100u64 {
        causes.extend(
            w.record(
                &o,
                &woken_late,
                t0 + ms(10 * i),
                ms(5),
                Duration::ZERO,
                in_ticks(ms(1)),
            )
            .map(|(cause, _)| cause),
        );
    }
    w.record(
        &o,
        &woken_late,
        t0 + ms(3_000),
        ms(0),
        Duration::ZERO,
        in_ticks(ms(0)),
    );
    assert!(causes.iter().all(|c| *c == LateCause::Others) && causes.len() == 100);
    assert!(!woken_late.late());
    assert!(woken_late.late_by_others());
    // It still takes matches, with its matches using half the core.
    woken_late.cost_ns.store(500_000_000, Ordering::Relaxed);
    assert_eq!(place(&o, &[(&woken_late, 10)], 1_000_000), Ok(0));

    // Still busy with its own work for 3 ms when ticks fell due: full.
    let busy = ThreadLoad::default();
    let mut w = Window::default();
    for i in 0..100u64 {
        let cause = w.record(
            &o,
            &busy,
            t0 + ms(10 * i),
            ms(3),
            Duration::ZERO,
            in_ticks(ms(3)),
        );
        assert_eq!(cause.map(|(cause, _)| cause), Some(LateCause::Own));
    }
    w.record(
        &o,
        &busy,
        t0 + ms(3_000),
        ms(0),
        Duration::ZERO,
        in_ticks(ms(0)),
    );
    assert!(busy.late());
    assert!(!busy.late_by_others());
    busy.cost_ns.store(500_000_000, Ordering::Relaxed);
    let err = place(&o, &[(&busy, 10)], 1_000_000).unwrap_err();
    assert!(err.to_string().contains("tick lateness p99"), "{err}");
    assert_eq!(err.label(), "lateness");
}

#[test]
fn placement_takes_the_most_headroom_and_refuses_past_the_objective() {
    let o = objective();
    let a = ThreadLoad::default();
    let b = ThreadLoad::default();
    a.cost_ns.store(100_000_000, Ordering::Relaxed);
    b.cost_ns.store(600_000_000, Ordering::Relaxed);
    // By cost: the thread with fewer matches but more load is not chosen.
    assert_eq!(place(&o, &[(&a, 30), (&b, 1)], 10_000_000), Ok(0));
    let by_count = Objective {
        placement: Placement::Count,
        ..objective()
    };
    assert_eq!(place(&by_count, &[(&a, 30), (&b, 1)], 10_000_000), Ok(1));
    // 650 + 100 fits 750; 660 + 100 does not, anywhere.
    a.cost_ns.store(700_000_000, Ordering::Relaxed);
    b.cost_ns.store(650_000_000, Ordering::Relaxed);
    assert_eq!(place(&o, &[(&a, 1), (&b, 1)], 100_000_000), Ok(1));
    b.cost_ns.store(660_000_000, Ordering::Relaxed);
    let err = place(&o, &[(&a, 1), (&b, 1)], 100_000_000).unwrap_err();
    assert!(err.to_string().starts_with("Node is full"), "{err}");
    assert_eq!(err.label(), "cpu");
    // Without admission the match is placed anyway.
    let open = Objective {
        admission: false,
        ..objective()
    };
    assert_eq!(place(&open, &[(&a, 1), (&b, 1)], 100_000_000), Ok(1));
}

/// A tick's own lateness, `arrivals` of it spent on join attempts and the rest in other ticks.
fn with_arrivals(own: Duration, arrivals: Duration) -> impl FnOnce() -> OwnSplit {
    move || {
        let mut split = OwnSplit::default();
        split.by_work[Work::Tick.index()] = own.saturating_sub(arrivals);
        split.by_work[Work::JoinAttempt.index()] = arrivals;
        split.steady = own.saturating_sub(arrivals);
        split
    }
}

/// One window of 100 ticks 10 ms apart, each late 3 ms by its own work, `arrivals` of it
/// join attempts, with the thread's own time on arrivals reaching `spent` by the window's
/// end; then the tick that publishes it. Returns the late ticks' causes.
fn rush_window(load: &ThreadLoad, arrivals: Duration, spent: Duration) -> Vec<LateCause> {
    let o = objective();
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut w = Window::default();
    let mut causes = Vec::new();
    for i in 0..100u64 {
        let so_far = spent * (i as u32) / 100;
        causes.extend(
            w.record(
                &o,
                load,
                t0 + ms(10 * i),
                ms(3),
                so_far,
                with_arrivals(ms(3), arrivals),
            )
            .map(|(cause, _)| cause),
        );
    }
    w.record(&o, load, t0 + ms(2_000), ms(0), spent, in_ticks(ms(0)));
    causes
}

/// The rush (issue 21): every tick 3 ms late by the thread's own work, 2.5 ms of it join
/// attempts, while the thread's matches use half its core and arrivals 0.4 s a second. That
/// lateness passes with the rush: the thread is not full, and takes the next match. The same
/// lateness from the matches' own ticks makes it full; and so do arrivals that, beside its
/// matches, need more than the whole thread (0.6 s a second with half the core taken): it
/// would never catch up while they last.
#[test]
fn a_rush_of_arrivals_that_fits_beside_the_matches_is_not_full() {
    let o = objective();
    let ms = Duration::from_millis;
    let rush = ThreadLoad::default();
    rush.cost_ns.store(500_000_000, Ordering::Relaxed);
    let causes = rush_window(&rush, ms(2) + ms(1) / 2, ms(800));
    assert!(causes.len() == 100 && causes.iter().all(|c| *c == LateCause::Arrivals));
    assert!(!rush.late());
    assert!(
        !rush.late_by_others(),
        "its own lateness broke the objective"
    );
    assert_eq!(place(&o, &[(&rush, 10)], 1_000_000), Ok(0));

    let ticks = ThreadLoad::default();
    ticks.cost_ns.store(500_000_000, Ordering::Relaxed);
    let causes = rush_window(&ticks, ms(1) / 2, ms(800));
    assert!(
        causes.iter().all(|c| *c == LateCause::Own),
        "2.5 ms of ticks: over"
    );
    assert!(ticks.late());
    let refused = place(&o, &[(&ticks, 10)], 1_000_000).unwrap_err();
    assert_eq!(refused.label(), "lateness");

    let endless = ThreadLoad::default();
    endless.cost_ns.store(500_000_000, Ordering::Relaxed);
    rush_window(&endless, ms(2) + ms(1) / 2, ms(1_200));
    assert!(endless.late());
    assert_eq!(
        place(&o, &[(&endless, 10)], 1_000_000).map_err(|r| r.label()),
        Err("lateness")
    );
}

/// The thread's own time on arrivals adds up the pieces between a mark of arrival work and
/// the next mark, less the time the OS ran other threads.
#[test]
fn the_threads_own_time_on_arrivals_is_counted_piece_by_piece() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    let mut own = OwnTime::new(mark(t0, us(0)));
    own.mark(mark(t0, us(0)), Work::Start);
    own.mark(mark(t0 + us(2_000), us(500)), Work::Tick);
    own.mark(mark(t0 + us(3_000), us(500)), Work::JoinAttempt);
    own.mark(mark(t0 + us(3_400), us(500)), Work::Signal);
    own.mark(mark(t0 + us(4_000), us(500)), Work::Join);
    assert_eq!(
        own.arrivals(),
        us(1_900),
        "1.5 ms start + 0.4 ms join attempt"
    );
    // The last piece counts when the next mark closes it (before a wait: `Scheduler::wait`).
    own.mark(mark(t0 + us(4_300), us(600)), Work::Mailbox);
    assert_eq!(own.arrivals(), us(2_100));
}
