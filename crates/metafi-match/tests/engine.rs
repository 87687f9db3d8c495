//! The match engine driven tick by tick with a fake clock: schedule and lateness, capacity under
//! a join race, listing that follows joins and label changes at once, isolation of a failing
//! handler, nil state, shutdown with grace, bounded inputs.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_match::testing::{ScriptedMatch, Sent, join_request, presence};
use metafi_match::{
    Flow, HandlerError, JoinOutcome, ListQuery, MatchConfig, MonotonicClock, PresenceReason, Queued,
};
use parking_lot::Mutex;
use support::Engine;
use uuid::Uuid;

const TICK: Duration = Duration::from_millis(100);

#[test]
fn ticks_follow_the_schedule_and_lateness_is_measured() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let start = engine.now();
    // Nothing runs before the first interval has passed.
    engine.clock.advance(Duration::from_millis(99));
    engine.step();
    assert!(calls.lock().ticks.is_empty());
    engine.clock.advance(Duration::from_millis(1));
    engine.step();
    assert_eq!(calls.lock().ticks, vec![0]);
    assert_eq!(engine.stats(&id).last_lateness_seconds, 0.0);

    // Woken 30 ms late: the tick runs then, the lateness is recorded, the schedule keeps its
    // phase (the next tick is still due at 200 ms, not 230 ms).
    engine.clock.advance(Duration::from_millis(130));
    engine.step();
    assert_eq!(calls.lock().ticks, vec![0, 1]);
    let s = engine.stats(&id);
    assert!((s.last_lateness_seconds - 0.030).abs() < 1e-9, "{s:?}");
    assert_eq!(
        engine.schedulers[0].next_deadline(),
        Some(start + Duration::from_millis(300))
    );

    engine.run_for(Duration::from_secs(1));
    assert_eq!(calls.lock().ticks.len(), 12);
    assert_eq!(calls.lock().ticks.last(), Some(&11));
}

/// Each match's tick instants, for `n` matches at 10 ticks/s created at one instant (a rush's
/// creations, handled one after another without time passing) and run for a second, with
/// ticks run exactly when due (no batch window).
fn burst(n: usize, spread_tick_phases: bool) -> (Instant, Vec<Vec<Instant>>) {
    let (created, ticks, _) = burst_batched(n, spread_tick_phases, Duration::ZERO);
    (created, ticks)
}

/// [`burst`] with `tick_batch_window`, and the flushes the engine made (in the server, each
/// one wake-up of the IO threads).
fn burst_batched(
    n: usize,
    spread_tick_phases: bool,
    tick_batch_window: Duration,
) -> (Instant, Vec<Vec<Instant>>, usize) {
    let mut engine = one_thread(spread_tick_phases, tick_batch_window);
    let created = engine.now();
    let mut ticks = Vec::new();
    for _ in 0..n {
        let (clock, at) = (engine.clock.clone(), Arc::new(Mutex::new(Vec::new())));
        let seen = at.clone();
        let (handler, _) = ScriptedMatch::new(10, move |_, _, _, _| {
            seen.lock().push(clock.now());
            Ok(Flow::Continue)
        });
        engine.create("burst", handler);
        ticks.push(at);
    }
    assert_eq!(engine.now(), created);
    let before = engine.outlet.flushes();
    engine.run_for(Duration::from_secs(1));
    let ticks = ticks.iter().map(|t| t.lock().clone()).collect();
    (created, ticks, engine.outlet.flushes() - before)
}

/// An engine with one executor thread, ticks spread or not, and the batch window given.
fn one_thread(spread_tick_phases: bool, tick_batch_window: Duration) -> Engine {
    Engine::new(MatchConfig {
        executor_threads: 1,
        spread_tick_phases,
        tick_batch_window,
        ..MatchConfig::default()
    })
}

/// The most ticks run at one instant (the harness steps once per instant, as the executor
/// runs every tick due at the start of a step in that step).
fn most_ticks_in_one_step(ticks: &[Vec<Instant>]) -> usize {
    let mut per_instant: HashMap<Instant, usize> = HashMap::new();
    for at in ticks.iter().flatten() {
        *per_instant.entry(*at).or_default() += 1;
    }
    per_instant.into_values().max().unwrap_or(0)
}

#[test]
fn a_burst_of_creations_ticks_spread_over_the_interval() {
    let (created, ticks) = burst(250, true);
    // 100 milliseconds in the interval: at most ceil(250 / 100) = 3 ticks a step.
    assert_eq!(most_ticks_in_one_step(&ticks), 3);
    for at in &ticks {
        // Its first tick within one interval after its creation, then every 100 ms exactly.
        assert_eq!(at.len(), 10, "{at:?}");
        assert!(at[0] > created && at[0] <= created + TICK, "{at:?}");
        assert!(at.windows(2).all(|w| w[1] - w[0] == TICK), "{at:?}");
    }
    // The first match created keeps the whole interval, as a lone match does.
    assert_eq!(ticks[0][0], created + TICK);
    // A burst of 100: every match on its own millisecond.
    let (_, ticks) = burst(100, true);
    assert_eq!(most_ticks_in_one_step(&ticks), 1);

    // Phases not spread (`match.spread_tick_phases = false`, as before): all 250 in one step.
    let (_, ticks) = burst(250, false);
    assert_eq!(most_ticks_in_one_step(&ticks), 250);
}

#[test]
fn ticks_due_close_together_share_one_step() {
    // 100 matches, their phases spread one a millisecond apart: run exactly when due, each
    // tick is a step of its own, and each step a flush (in the server, a wake-up of the IO
    // threads: about three context switches a tick on a shared core).
    let (exact_created, exact, exact_flushes) = burst_batched(100, true, Duration::ZERO);
    assert_eq!(most_ticks_in_one_step(&exact), 1);
    // A 4 ms window: a step also runs the ticks due in the 4 ms after it began, so 5 ticks a
    // step and a fifth of the steps and flushes.
    let window = Duration::from_millis(4);
    let (batched_created, batched, batched_flushes) = burst_batched(100, true, window);
    assert_eq!(most_ticks_in_one_step(&batched), 5);
    assert!(
        batched_flushes * 4 <= exact_flushes,
        "{batched_flushes} flushes batched, {exact_flushes} exact"
    );
    // Each engine has its own fake clock: instants from its creation instant.
    let since = |created: Instant, ticks: &[Vec<Instant>]| -> Vec<Vec<Duration>> {
        ticks
            .iter()
            .map(|at| at.iter().map(|t| *t - created).collect())
            .collect()
    };
    let (exact, batched) = (
        since(exact_created, &exact),
        since(batched_created, &batched),
    );
    for (due, ran) in exact.iter().zip(&batched) {
        // The same phases; no tick runs late, none more than the window early, and every
        // match still ticks every 100 ms exactly (the second's last tick may come within the
        // window before its end: one more).
        assert!(ran.len() == due.len() || ran.len() == due.len() + 1);
        assert!(
            due.iter()
                .zip(ran)
                .all(|(due, ran)| ran <= due && *due - *ran <= window),
            "due {due:?}, ran {ran:?}"
        );
        assert!(ran.windows(2).all(|w| w[1] - w[0] == TICK), "{ran:?}");
    }
}

#[test]
fn a_fast_match_runs_at_most_an_eighth_of_its_interval_early() {
    // 100 ticks a second (10 ms apart) with a 4 ms window: early by 1.25 ms at most, so a
    // second match due 2 ms after the first waits for a step of its own.
    let mut engine = one_thread(false, Duration::from_millis(4));
    let (first, first_calls) = ScriptedMatch::new(100, |_, _, _, _| Ok(Flow::Continue));
    engine.create("first", first);
    engine.clock.advance(Duration::from_millis(1));
    let (second, second_calls) = ScriptedMatch::new(100, |_, _, _, _| Ok(Flow::Continue));
    engine.create("second", second);
    // The first is due at 10 ms, the second at 11 ms: both run in the step at 10 ms (1 ms
    // early is within an eighth of 10 ms).
    engine.clock.advance(Duration::from_millis(9));
    engine.step();
    assert_eq!(first_calls.lock().ticks, vec![0]);
    assert_eq!(second_calls.lock().ticks, vec![0]);

    let (third, third_calls) = ScriptedMatch::new(100, |_, _, _, _| Ok(Flow::Continue));
    engine.create("third", third);
    // The third is due at 20 ms, as is the first's next tick; a step at 18 ms runs neither
    // (2 ms early is more than 1.25 ms), a step at 18.75 ms runs both.
    engine.clock.advance(Duration::from_millis(8));
    engine.step();
    assert_eq!(first_calls.lock().ticks, vec![0]);
    assert!(third_calls.lock().ticks.is_empty());
    engine.clock.advance(Duration::from_micros(750));
    engine.step();
    assert_eq!(first_calls.lock().ticks, vec![0, 1]);
    assert_eq!(third_calls.lock().ticks, vec![0]);
}

#[test]
fn a_step_that_has_worked_half_a_millisecond_runs_nothing_early() {
    // Two matches 2 ms apart, a 4 ms window: a cheap first tick takes the second along; a
    // first tick of 600 µs (a thread near its capacity) does not, and the second runs at its
    // own due instant.
    for (cost, second_runs_early) in [(Duration::ZERO, true), (Duration::from_micros(600), false)] {
        let mut engine = one_thread(false, Duration::from_millis(4));
        let clock = engine.clock.clone();
        let (first, first_calls) = ScriptedMatch::new(10, move |_, _, _, _| {
            clock.advance(cost);
            Ok(Flow::Continue)
        });
        engine.create("first", first);
        engine.clock.advance(Duration::from_millis(2));
        let (second, second_calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
        engine.create("second", second);
        // The first is due at 100 ms, the second at 102 ms.
        engine.clock.advance(Duration::from_millis(98));
        engine.step();
        assert_eq!(first_calls.lock().ticks, vec![0]);
        assert_eq!(
            second_calls.lock().ticks.len(),
            usize::from(second_runs_early),
            "first tick's cost {cost:?}"
        );
    }
}

#[test]
fn a_match_more_than_an_interval_behind_skips_ticks() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    engine.clock.advance(Duration::from_millis(450));
    engine.step();
    assert_eq!(
        calls.lock().ticks,
        vec![0],
        "one tick, not four back to back"
    );
    assert_eq!(engine.stats(&id).skipped_ticks, 3);
    engine.run_for(Duration::from_millis(50));
    assert_eq!(
        calls.lock().ticks,
        vec![0, 1],
        "back on the original phase at 500 ms"
    );
}

#[test]
fn exactly_max_players_win_a_join_race() {
    let mut engine = Engine::single();
    let id = engine.create_seed(10);
    let players: Vec<_> = (0..100).map(|i| presence(&format!("p{i}"))).collect();
    let matches = engine.matches.clone();
    let attempts = players
        .iter()
        .map(|p| matches.join(&id, join_request(p)))
        .collect();
    let outcomes: Vec<JoinOutcome> = engine
        .drive_all(attempts)
        .into_iter()
        .map(|o| o.unwrap())
        .collect();
    let accepted: Vec<_> = outcomes
        .iter()
        .zip(&players)
        .filter(|(o, _)| matches!(o, JoinOutcome::Accepted { is_new: true, .. }))
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(accepted.len(), 10);
    for outcome in &outcomes {
        if let JoinOutcome::Rejected { reason } = outcome {
            assert_eq!(reason, "match full");
        }
    }
    // Pending joins count in the listing at once.
    let info = engine.matches.get(&id.to_string()).unwrap().unwrap();
    assert_eq!(info.size, 10);
    for p in &accepted {
        engine.matches.complete_join(&id, p.session_id);
    }
    engine.step();
    let s = engine.stats(&id);
    assert_eq!((s.presences, s.pending_joins), (10, 0));
    // And one more still cannot get in.
    let late = presence("late");
    let outcome = engine
        .drive(matches.join(&id, join_request(&late)))
        .unwrap();
    assert!(matches!(outcome, JoinOutcome::Rejected { .. }));
}

#[test]
fn listing_follows_joins_leaves_and_labels_at_once() {
    let mut engine = Engine::single();
    let id = engine.create_seed(2);
    let open = ListQuery {
        limit: 10,
        query: Some("+label.open:1".into()),
        ..ListQuery::default()
    };
    let not_full = ListQuery {
        limit: 10,
        authoritative: Some(true),
        max_size: Some(1),
        ..ListQuery::default()
    };
    assert_eq!(engine.matches.list(&open).unwrap().len(), 1);
    let a = engine.join(&id, "a");
    assert_eq!(engine.matches.list(&not_full).unwrap().len(), 1);
    let _b = engine.join(&id, "b");
    // The second join filled the match: the handler relabelled it in match_join, and both
    // filters see it without waiting for anything.
    assert!(engine.matches.list(&open).unwrap().is_empty());
    assert!(engine.matches.list(&not_full).unwrap().is_empty());
    let info = engine.matches.get(&id.to_string()).unwrap().unwrap();
    assert_eq!(info.label.as_deref(), Some(r#"{"open":0}"#));
    assert_eq!(info.size, 2);

    engine.matches.leave(&id, a.session_id);
    engine.step();
    assert_eq!(engine.matches.list(&open).unwrap().len(), 1);
    assert_eq!(engine.matches.list(&not_full).unwrap().len(), 1);
}

#[test]
fn listing_orders_filters_and_queries() {
    let mut engine = Engine::single();
    let mut ids = Vec::new();
    for (mode, skill) in [("ffa", 5), ("tdm", 12), ("ffa", 20)] {
        let (mut handler, _) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
        handler.label = format!(r#"{{"mode":"{mode}","skill":{skill}}}"#);
        ids.push(engine.create("scripted", handler).to_string());
    }
    let list = |engine: &Engine, query: &str| -> Vec<String> {
        engine
            .matches
            .list(&ListQuery {
                limit: 10,
                query: Some(query.into()),
                ..ListQuery::default()
            })
            .unwrap()
            .into_iter()
            .map(|m| m.match_id)
            .collect()
    };
    assert_eq!(
        list(&engine, "+label.mode:ffa"),
        vec![ids[2].clone(), ids[0].clone()],
        "newest first"
    );
    assert_eq!(
        list(&engine, "+label.skill:>=10"),
        vec![ids[2].clone(), ids[1].clone()]
    );
    assert_eq!(list(&engine, "-label.mode:ffa"), vec![ids[1].clone()]);
    assert_eq!(
        list(&engine, "+label.mode:ffa +label.skill:<10"),
        vec![ids[0].clone()]
    );
    // An optional clause ranks its matches first.
    assert_eq!(list(&engine, "label.mode:ffa label.skill:12^5")[0], ids[1]);
    assert_eq!(list(&engine, "*").len(), 3);
    let err = engine
        .matches
        .list(&ListQuery {
            limit: 10,
            query: Some("+label.mode:/f.a/".into()),
            ..ListQuery::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("regular expressions"), "{err}");

    // Relayed matches come after authoritative ones unless only one kind is asked for.
    let creator = presence("relay");
    let relayed = engine.matches.create_relayed(None, creator).unwrap();
    let all = engine
        .matches
        .list(&ListQuery {
            limit: 10,
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all[3].match_id, relayed.match_id.to_string());
    assert!(!all[3].authoritative);
    let only_relayed = engine
        .matches
        .list(&ListQuery {
            limit: 10,
            authoritative: Some(false),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(only_relayed.len(), 1);
    let limited = engine
        .matches
        .list(&ListQuery {
            limit: 2,
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(limited.len(), 2);
    let by_label = engine
        .matches
        .list(&ListQuery {
            limit: 10,
            label: Some(r#"{"mode":"tdm","skill":12}"#.into()),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(by_label.len(), 1);
}

#[test]
fn seed_match_echoes_op_1_and_broadcasts_op_2() {
    let mut engine = Engine::single();
    let id = engine.create_seed(10);
    let a = engine.join(&id, "a");
    let b = engine.join(&id, "b");
    engine.outlet.take();
    let now = Bytes::from_static(b"echo me");
    assert_eq!(
        engine
            .matches
            .send(&id, a.session_id, 1, now.clone(), true, &[]),
        Queued::Queued
    );
    assert_eq!(
        engine
            .matches
            .send(&id, b.session_id, 2, Bytes::from_static(b"all"), true, &[]),
        Queued::Queued
    );
    assert!(
        engine.outlet.take().is_empty(),
        "nothing is sent before the tick"
    );
    engine.run_for(TICK);
    let sent = engine.outlet.take();
    assert_eq!(sent.len(), 2, "{sent:?}");
    match &sent[0] {
        Sent::Data {
            to,
            op_code,
            data,
            sender,
            ..
        } => {
            assert_eq!(to, &vec![a.session_id]);
            assert_eq!((*op_code, data), (1, &now));
            assert_eq!(*sender, Some(a.session_id));
        }
        other => panic!("{other:?}"),
    }
    match &sent[1] {
        Sent::Data { to, op_code, .. } => {
            let mut to = to.clone();
            to.sort();
            let mut both = vec![a.session_id, b.session_id];
            both.sort();
            assert_eq!((to, *op_code), (both, 2));
        }
        other => panic!("{other:?}"),
    }
    // Someone outside the match cannot feed it.
    let stranger = Uuid::new_v4();
    assert_eq!(
        engine
            .matches
            .send(&id, stranger, 2, Bytes::new(), true, &[]),
        Queued::NotMember
    );
}

#[test]
fn joins_and_leaves_are_announced_in_order() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let a = engine.join(&id, "a");
    let sent = engine.outlet.take();
    assert_eq!(
        sent,
        vec![Sent::Presences {
            to: vec![a.session_id],
            match_id: id.to_string(),
            joins: vec![a.session_id],
            leaves: vec![],
        }],
        "the joiner hears its own join, as with Nakama"
    );
    let b = engine.join(&id, "b");
    engine.outlet.take();
    engine.matches.leave(&id, a.session_id);
    engine.step();
    assert_eq!(
        engine.outlet.take(),
        vec![Sent::Presences {
            to: vec![b.session_id],
            match_id: id.to_string(),
            joins: vec![],
            leaves: vec![a.session_id],
        }]
    );
    engine.matches.session_ended(b.session_id);
    engine.step();
    let calls = calls.lock().clone();
    assert_eq!(calls.joins, vec![a.session_id, b.session_id]);
    assert_eq!(
        calls.leaves,
        vec![
            (a.session_id, PresenceReason::Leave),
            (b.session_id, PresenceReason::Disconnect)
        ]
    );
}

#[test]
fn a_session_ended_by_server_code_leaves_with_the_reason_it_named() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let a = engine.join(&id, "a");
    engine.outlet.take();
    // nk.session_disconnect(session, 3): the match sees a Leave, not a Disconnect.
    engine
        .matches
        .session_ended_because(a.session_id, PresenceReason::Leave);
    engine.step();
    assert_eq!(
        calls.lock().leaves,
        vec![(a.session_id, PresenceReason::Leave)]
    );
}

#[test]
fn a_failing_handler_ends_only_its_match() {
    let mut engine = Engine::single();
    let (healthy, healthy_calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let healthy_id = engine.create("healthy", healthy);
    let (crashing, _) = ScriptedMatch::new(10, |_, _, tick, _| {
        if tick == 5 {
            panic!("boom at tick 5");
        }
        Ok(Flow::Continue)
    });
    let crashing_id = engine.create("crashing", crashing);
    let player = engine.join(&crashing_id, "victim");
    let (failing, _) = ScriptedMatch::new(10, |_, _, tick, _| {
        if tick == 3 {
            return Err(HandlerError::failed("attempt to index a nil value"));
        }
        Ok(Flow::Continue)
    });
    let failing_id = engine.create("failing", failing);
    engine.outlet.take();

    engine.run_for(Duration::from_secs(2));
    assert_eq!(engine.matches.count(), 1);
    assert!(
        engine
            .matches
            .get(&crashing_id.to_string())
            .unwrap()
            .is_none()
    );
    assert!(
        engine
            .matches
            .get(&failing_id.to_string())
            .unwrap()
            .is_none()
    );
    // The healthy match kept its 10 ticks per second, on time.
    assert_eq!(healthy_calls.lock().ticks.len(), 20);
    let s = engine.stats(&healthy_id);
    assert_eq!(s.max_lateness_seconds, 0.0);
    // The crashed match's player was told it left.
    let sent = engine.outlet.take();
    assert!(
        sent.contains(&Sent::Presences {
            to: vec![player.session_id],
            match_id: crashing_id.to_string(),
            joins: vec![],
            leaves: vec![player.session_id],
        }),
        "{sent:?}"
    );
    // Its player is free: a disconnect now touches nothing.
    engine.matches.session_ended(player.session_id);
    engine.step();
}

#[test]
fn a_callback_over_its_budget_ends_its_match_and_others_keep_time() {
    let mut engine = Engine::new(MatchConfig {
        executor_threads: 1,
        handler_budget: Duration::from_millis(50),
        ..MatchConfig::default()
    });
    let clock = engine.clock.clone();
    // Created at the same instant, the two tick 1 ms apart (phases spread, `phase.rs`): the
    // slow callback takes 150 ms so the healthy tick due 99 ms into it waits for it.
    let (slow, _) = ScriptedMatch::new(10, move |_, _, tick, _| {
        if tick == 2 {
            clock.advance(Duration::from_millis(150));
        }
        Ok(Flow::Continue)
    });
    let slow_id = engine.create("slow", slow);
    let (healthy, healthy_calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let healthy_id = engine.create("healthy", healthy);
    engine.run_for(Duration::from_secs(1));
    assert!(engine.matches.get(&slow_id.to_string()).unwrap().is_none());
    assert_eq!(healthy_calls.lock().ticks.len(), 10);
    // The healthy match ran after the slow callback once, 50 ms late (the slow tick due at
    // 300 ms ran 1 ms early, in the step of the healthy one's tick due at 299 ms: the batch
    // window; it ended at 449 ms, and the healthy tick due at 399 ms ran then); then on time.
    let s = engine.stats(&healthy_id);
    assert!((s.max_lateness_seconds - 0.050).abs() < 1e-9, "{s:?}");
    assert_eq!(s.last_lateness_seconds, 0.0);
}

#[test]
fn nil_state_ends_the_match() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, tick, _| {
        Ok(if tick == 2 { Flow::End } else { Flow::Continue })
    });
    let id = engine.create("ender", handler);
    let p = engine.join(&id, "p");
    engine.run_for(Duration::from_secs(1));
    assert_eq!(calls.lock().ticks, vec![0, 1, 2]);
    assert!(engine.matches.get(&id.to_string()).unwrap().is_none());
    assert_eq!(
        engine
            .matches
            .send(&id, p.session_id, 1, Bytes::new(), true, &[]),
        Queued::Ended
    );
}

#[test]
fn init_is_checked() {
    let mut engine = Engine::single();
    for rate in [0, 129] {
        let (handler, _) = ScriptedMatch::new(rate, |_, _, _, _| Ok(Flow::Continue));
        let matches = engine.matches.clone();
        let err = engine
            .drive(matches.create(support::spec("bad", handler)))
            .unwrap_err();
        assert!(err.to_string().contains("invalid tick rate"), "{err}");
    }
    let (handler, _) = ScriptedMatch::new(128, |_, _, _, _| Ok(Flow::Continue));
    engine.create("fast", handler);
    assert_eq!(engine.matches.count(), 1);
}

#[test]
fn graceful_shutdown_calls_terminate_with_the_grace_period() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    engine.matches.begin_shutdown(Duration::from_secs(2));
    engine.step();
    assert_eq!(calls.lock().terminated_with, Some(2));
    // The match keeps ticking during the grace period, then ends.
    engine.run_for(Duration::from_millis(1500));
    assert!(engine.matches.get(&id.to_string()).unwrap().is_some());
    engine.run_for(Duration::from_millis(600));
    assert!(engine.matches.get(&id.to_string()).unwrap().is_none());
    // No new matches while stopping.
    let (handler, _) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let matches = engine.matches.clone();
    let err = engine
        .drive(matches.create(support::spec("late", handler)))
        .unwrap_err();
    assert_eq!(err, metafi_match::MatchError::ShuttingDown);
}

#[test]
fn input_queues_are_bounded_and_drops_counted() {
    let mut engine = Engine::new(MatchConfig {
        executor_threads: 1,
        input_queue_size: 4,
        ..MatchConfig::default()
    });
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let record = seen.clone();
    let (handler, _) = ScriptedMatch::new(10, move |_, _, _, messages| {
        record.lock().push(messages.len());
        Ok(Flow::Continue)
    });
    let id = engine.create("scripted", handler);
    let p = engine.join(&id, "p");
    let results: Vec<Queued> = (0..10)
        .map(|i| {
            engine
                .matches
                .send(&id, p.session_id, i, Bytes::new(), true, &[])
        })
        .collect();
    assert_eq!(results.iter().filter(|r| **r == Queued::Queued).count(), 4);
    assert_eq!(results.iter().filter(|r| **r == Queued::Dropped).count(), 6);
    engine.run_for(TICK);
    assert_eq!(*seen.lock(), vec![4]);
    let s = engine.stats(&id);
    assert_eq!((s.dropped_inputs, s.input_queue_depth), (6, 4));
}

#[test]
fn pending_joins_lapse_when_never_completed() {
    let mut engine = Engine::new(MatchConfig {
        executor_threads: 1,
        join_marker_deadline: Duration::from_millis(500),
        ..MatchConfig::default()
    });
    let id = engine.create_seed(1);
    let ghost = presence("ghost");
    let matches = engine.matches.clone();
    let outcome = engine
        .drive(matches.join(&id, join_request(&ghost)))
        .unwrap();
    assert!(matches!(outcome, JoinOutcome::Accepted { .. }));
    let other = presence("other");
    let outcome = engine
        .drive(matches.join(&id, join_request(&other)))
        .unwrap();
    assert!(
        matches!(outcome, JoinOutcome::Rejected { .. }),
        "the pending join holds the seat"
    );
    engine.run_for(Duration::from_millis(600));
    assert_eq!(engine.stats(&id).pending_joins, 0);
    let outcome = engine
        .drive(matches.join(&id, join_request(&other)))
        .unwrap();
    assert!(
        matches!(outcome, JoinOutcome::Accepted { .. }),
        "the seat is free again"
    );
}

#[test]
fn a_disconnected_session_cannot_join() {
    let mut engine = Engine::single();
    let id = engine.create_seed(10);
    let p = presence("gone");
    engine.outlet.disconnect(p.session_id);
    let matches = engine.matches.clone();
    let outcome = engine.drive(matches.join(&id, join_request(&p))).unwrap();
    assert!(matches!(outcome, JoinOutcome::Rejected { .. }));
    assert_eq!(engine.stats(&id).pending_joins, 0);
}

#[test]
fn kicks_tell_everyone_and_call_match_leave() {
    let mut engine = Engine::single();
    let victim: Arc<parking_lot::Mutex<Option<Uuid>>> = Arc::default();
    let target = victim.clone();
    let (handler, calls) = ScriptedMatch::new(10, move |_, d, _, _| {
        if let Some(session) = target.lock().take() {
            d.kick(&[session]);
        }
        Ok(Flow::Continue)
    });
    let id = engine.create("kicker", handler);
    let a = engine.join(&id, "a");
    let b = engine.join(&id, "b");
    engine.outlet.take();
    *victim.lock() = Some(a.session_id);
    engine.run_for(TICK);
    let sent = engine.outlet.take();
    assert!(sent.contains(&Sent::Presences {
        to: vec![a.session_id],
        match_id: id.to_string(),
        joins: vec![],
        leaves: vec![a.session_id],
    }));
    assert!(sent.contains(&Sent::Presences {
        to: vec![b.session_id],
        match_id: id.to_string(),
        joins: vec![],
        leaves: vec![a.session_id],
    }));
    assert_eq!(
        calls.lock().leaves,
        vec![(a.session_id, PresenceReason::Leave)]
    );
    assert_eq!(
        engine
            .matches
            .send(&id, a.session_id, 1, Bytes::new(), true, &[]),
        Queued::NotMember
    );
}

#[test]
fn deferred_broadcasts_follow_direct_ones() {
    let mut engine = Engine::single();
    let (handler, _) = ScriptedMatch::new(10, |_, d, tick, _| {
        if tick == 0 {
            d.broadcast_deferred(2, &Bytes::from_static(b"later"), None, None, true)
                .map_err(|e| HandlerError::failed(e.to_string()))?;
            d.broadcast(1, &Bytes::from_static(b"now"), None, None, true);
        }
        Ok(Flow::Continue)
    });
    let id = engine.create("deferring", handler);
    let p = engine.join(&id, "p");
    engine.outlet.take();
    engine.run_for(TICK);
    assert_eq!(
        engine.outlet.data_for(p.session_id),
        vec![
            (1, Bytes::from_static(b"now")),
            (2, Bytes::from_static(b"later"))
        ]
    );
}

#[test]
fn signals_reach_the_handler() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let matches = engine.matches.clone();
    let reply = engine
        .drive(matches.signal(&id.to_string(), "ping".into()))
        .unwrap();
    assert_eq!(reply, "got ping");
    assert_eq!(calls.lock().signals, vec!["ping".to_owned()]);
    let missing = format!("{}.node1", Uuid::new_v4());
    let err = engine
        .drive(matches.signal(&missing, "x".into()))
        .unwrap_err();
    assert_eq!(err, metafi_match::MatchError::NotFound);
}

#[test]
fn empty_matches_stop_after_max_empty() {
    let mut engine = Engine::new(MatchConfig {
        executor_threads: 1,
        max_empty: Some(Duration::from_secs(1)),
        ..MatchConfig::default()
    });
    let id = engine.create_seed(10);
    engine.run_for(Duration::from_millis(950));
    assert!(engine.matches.get(&id.to_string()).unwrap().is_some());
    engine.run_for(Duration::from_millis(100));
    assert!(engine.matches.get(&id.to_string()).unwrap().is_none());
}

#[test]
fn matches_spread_over_threads() {
    let mut engine = Engine::new(MatchConfig {
        executor_threads: 3,
        ..MatchConfig::default()
    });
    for _ in 0..9 {
        engine.create_seed(10);
    }
    let per_thread: Vec<usize> = engine.schedulers.iter().map(|s| s.len()).collect();
    assert_eq!(per_thread, vec![3, 3, 3]);
}

#[test]
fn relayed_matches_relay_between_members() {
    let engine = Engine::single();
    let a = presence("a");
    let created = engine.matches.create_relayed(None, a.clone()).unwrap();
    assert!(created.is_new && created.presences.is_empty());
    engine
        .matches
        .complete_join(&created.match_id, a.session_id);
    let b = presence("b");
    let c = presence("c");
    let uuid = created.match_id.uuid();
    for p in [&b, &c] {
        let joined = engine.matches.join_relayed(uuid, p.clone(), false).unwrap();
        assert!(joined.is_new);
        engine.matches.complete_join(&joined.match_id, p.session_id);
    }
    let again = engine.matches.join_relayed(uuid, b.clone(), false).unwrap();
    assert!(!again.is_new);
    assert_eq!(
        again.presences.len(),
        3,
        "a repeated join lists everyone, itself included"
    );
    assert!(
        engine
            .matches
            .join_relayed(Uuid::new_v4(), b.clone(), false)
            .is_none()
    );
    engine.outlet.take();

    let id = created.match_id.clone();
    engine
        .matches
        .send(&id, a.session_id, 7, Bytes::from_static(b"hi"), true, &[]);
    engine.matches.send(
        &id,
        a.session_id,
        8,
        Bytes::from_static(b"c only"),
        true,
        &[c.session_id],
    );
    assert_eq!(engine.outlet.data_for(a.session_id), vec![]);
    assert_eq!(
        engine.outlet.data_for(b.session_id),
        vec![(7, Bytes::from_static(b"hi"))]
    );
    assert_eq!(
        engine.outlet.data_for(c.session_id),
        vec![
            (7, Bytes::from_static(b"hi")),
            (8, Bytes::from_static(b"c only"))
        ]
    );
    assert_eq!(
        engine
            .matches
            .send(&id, Uuid::new_v4(), 7, Bytes::new(), true, &[]),
        Queued::NotMember
    );
    let info = engine.matches.get(&id.to_string()).unwrap().unwrap();
    assert_eq!((info.size, info.authoritative), (3, false));

    engine.matches.leave(&id, a.session_id);
    engine.matches.session_ended(b.session_id);
    engine.matches.session_ended(c.session_id);
    assert!(
        engine.matches.get(&id.to_string()).unwrap().is_none(),
        "an empty relayed match disappears"
    );

    // Named matches share an id.
    let x = engine
        .matches
        .create_relayed(Some("lobby"), presence("x"))
        .unwrap();
    let y = engine
        .matches
        .create_relayed(Some("lobby"), presence("y"))
        .unwrap();
    assert_eq!(x.match_id, y.match_id);
    assert_eq!(y.members, 2);
}

/// A relayed member's join is announced once: a completion repeated (by its node, or cast
/// again by another node of a cluster, which lands here too) sends no second join event, as
/// for an authoritative match's accepted join; after a leave and a new join it is announced
/// again.
#[test]
fn a_repeated_completion_announces_a_relayed_join_once() {
    let engine = Engine::single();
    let (a, b) = (presence("a"), presence("b"));
    let created = engine.matches.create_relayed(None, a.clone()).unwrap();
    let id = created.match_id.clone();
    engine.matches.complete_join(&id, a.session_id);
    let joined = engine
        .matches
        .join_relayed(id.uuid(), b.clone(), false)
        .unwrap();
    assert!(joined.is_new);
    engine.outlet.take();
    let joins_of_b = |sent: Vec<Sent>| {
        sent.into_iter()
            .filter(|s| matches!(s, Sent::Presences { joins, .. } if joins == &[b.session_id]))
            .count()
    };
    for _ in 0..3 {
        engine.matches.complete_join(&id, b.session_id);
    }
    assert_eq!(joins_of_b(engine.outlet.take()), 1);

    engine.matches.leave(&id, b.session_id);
    engine.outlet.take();
    engine
        .matches
        .join_relayed(id.uuid(), b.clone(), false)
        .unwrap();
    engine.matches.complete_join(&id, b.session_id);
    engine.matches.complete_join(&id, b.session_id);
    assert_eq!(
        joins_of_b(engine.outlet.take()),
        1,
        "a new join is announced"
    );
}
