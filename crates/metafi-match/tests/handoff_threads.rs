//! The hand-off on the real executor threads, as the server builds the engine (the system
//! clock, `Executor::spawn`, two threads, `match.hand_off` on with a short
//! `hand_off_after`). `handoff.rs` proves the rule step by step with a fake clock; this test
//! proves the threads: a match moves while clients keep talking to it, and nothing of it runs
//! on two threads, is lost, or is reordered.
//!
//! Costs are synthetic: the expensive match *sleeps* in its tick (the engine measures a tick
//! by the clock, so a sleep is cost without burning the shared CPU), and the set-up is chosen
//! so the outcome does not depend on the machine's speed. A cheap 100 ticks/s match and an
//! expensive 10 ticks/s one (20 ms a tick, 20 % of a core) share a thread: every expensive
//! tick holds the cheap match ≥ 10 ms past its deadline, so ~10 % of the thread's ticks are late
//! whatever their phases, while the thread stays under the CPU objective (nothing is stretched).
//! The cheap match is pinned (like a script VM's), so the expensive one is the only match that
//! can move, whatever the busy machine does to the measured costs; the other thread is empty,
//! so the rule hands the expensive match over. Afterwards each thread runs one match, and a
//! thread with one match never hands it off, so nothing moves again. A slow machine only makes
//! the first thread later.
//!
//! The assertions are about order and final state only; the one timeout (60 s) fails the test
//! only if the hand-off never happens at all.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use metafi_match::testing::{Call, Calls, ScriptedMatch, join_request, presence, running};
use metafi_match::{
    Flow, HandlerError, JoinOutcome, MatchConfig, MatchId, Matches, Objective, Presence,
    PresenceReason, Queued,
};
use parking_lot::Mutex;
use support::{movable, spec};
use uuid::Uuid;

/// The executor thread a callback ran on, from its thread's name (`metafi-match-<n>`).
fn executor_index(name: Option<&str>) -> usize {
    name.and_then(|n| n.strip_prefix("metafi-match-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a handler ran outside the executor threads: {name:?}"))
}

fn executor_thread() -> usize {
    executor_index(std::thread::current().name())
}

/// One tick of the expensive match: its number, the handler's own count of its ticks (its
/// state, which travels with it), the messages it got and the thread it ran on.
type Tick = (i64, i64, Vec<u64>, usize);

/// The executor threads a match's ticks ran on, in order.
type Threads = Arc<Mutex<Vec<usize>>>;

/// What the test and the expensive match share.
#[derive(Default)]
struct Probe {
    ticks: Mutex<Vec<Tick>>,
    /// Messages the match has seen so far.
    seen: AtomicU64,
    /// The cheap neighbour it created on its own thread, with the threads its ticks ran on.
    neighbour: Mutex<Option<(MatchId, Threads)>>,
}

impl Probe {
    /// Ticks that got messages on `thread`.
    fn busy_ticks_on(&self, thread: usize) -> usize {
        self.ticks
            .lock()
            .iter()
            .filter(|(_, _, messages, t)| !messages.is_empty() && *t == thread)
            .count()
    }
}

/// The cheap neighbour: 100 ticks/s, each recording its thread, not movable. Created inline on
/// the calling executor thread (as `nk.match_create` in a callback is): the future is ready at
/// once.
fn create_neighbour(matches: &Matches) -> Result<(MatchId, Threads), HandlerError> {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let (cheap, _) = {
        let threads = threads.clone();
        ScriptedMatch::new(100, move |_, _, _, _| {
            threads.lock().push(executor_thread());
            Ok(Flow::Continue)
        })
    };
    let create = matches.create(spec("cheap", cheap));
    let mut create = std::pin::pin!(create);
    let Poll::Ready(created) = create
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    else {
        return Err(HandlerError::failed("inline match_create did not complete"));
    };
    let id = created.map_err(|e| HandlerError::failed(e.to_string()))?;
    Ok((id, threads))
}

/// The expensive match, 10 ticks/s: at its first tick it creates its cheap neighbour on its own
/// thread; every later tick sleeps 20 ms.
fn expensive(matches: Matches, probe: Arc<Probe>) -> (ScriptedMatch, Arc<Mutex<Calls>>) {
    let mut count = 0;
    ScriptedMatch::new(10, move |_, _, tick, messages| {
        if count == 0 {
            *probe.neighbour.lock() = Some(create_neighbour(&matches)?);
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
        count += 1;
        let messages: Vec<u64> = messages
            .iter()
            .map(|m| std::str::from_utf8(&m.data).unwrap().parse().unwrap())
            .collect();
        probe
            .seen
            .fetch_add(messages.len() as u64, Ordering::AcqRel);
        probe
            .ticks
            .lock()
            .push((tick, count, messages, executor_thread()));
        Ok(Flow::Continue)
    })
}

/// Polls `check` every 5 ms until it holds; panics with `what` after `limit`.
async fn until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Joins `p` to match `id` and completes the join.
async fn join(matches: &Matches, id: &MatchId, p: &Arc<Presence>) {
    let outcome = matches.join(id, join_request(p)).await.unwrap();
    assert!(
        matches!(outcome, JoinOutcome::Accepted { is_new: true, .. }),
        "{outcome:?}"
    );
    matches.complete_join(id, p.session_id);
}

/// What the client-side tasks did, in their order.
#[derive(Debug, Default)]
struct Traffic {
    /// Messages sent (their data is their number, 0, 1, 2, …).
    sent: AtomicU64,
    /// Presences that joined and then left, in order.
    visitors: Mutex<Vec<Uuid>>,
    /// Signal replies, in order.
    replies: Mutex<Vec<String>>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_moves_between_running_executor_threads_with_its_state_and_traffic_intact() {
    let config = MatchConfig {
        executor_threads: 2,
        // A slow machine must not end the sleeping match (a native callback past its budget
        // ends it).
        handler_budget: Duration::from_secs(5),
        objective: Objective {
            hand_off: true,
            window: Duration::from_millis(500),
            // Two late windows: the clients below are well under way before anything moves.
            hand_off_after: Duration::from_millis(1000),
            ..Objective::default()
        },
        ..MatchConfig::default()
    };
    let (matches, executor, _) = running(config).unwrap();
    let probe = Arc::new(Probe::default());
    let (handler, calls) = expensive(matches.clone(), probe.clone());
    let id = matches.create(movable("expensive", handler)).await.unwrap();
    until(
        Duration::from_secs(60),
        "the first tick did not run",
        || probe.neighbour.lock().is_some(),
    )
    .await;
    let (neighbour, neighbour_threads) = probe.neighbour.lock().clone().unwrap();
    let thread_of = |id: &MatchId| {
        matches
            .stats()
            .into_iter()
            .find(|s| s.match_id == id.to_string())
            .unwrap()
            .executor_thread
    };
    let first = thread_of(&id);
    assert_eq!(
        thread_of(&neighbour),
        first,
        "created on its creator's thread"
    );
    assert_eq!(matches.load().moves, 0);

    // Clients: one sends numbered messages, never more than 32 ahead of what the match has
    // seen (so none is dropped however slowly the machine runs); another joins, signals and
    // leaves over and over.
    let traffic = Arc::new(Traffic::default());
    let stop = Arc::new(AtomicBool::new(false));
    let sender = presence("sender");
    join(&matches, &id, &sender).await;
    until(
        Duration::from_secs(60),
        "the sender's join did not complete",
        || calls.lock().joins.contains(&sender.session_id),
    )
    .await;
    let sending = {
        let session = sender.session_id;
        let (matches, id, probe, traffic, stop) = (
            matches.clone(),
            id.clone(),
            probe.clone(),
            traffic.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            while !stop.load(Ordering::Acquire) {
                let n = traffic.sent.load(Ordering::Acquire);
                if n - probe.seen.load(Ordering::Acquire) < 32 {
                    let queued =
                        matches.send(&id, session, 1, Bytes::from(n.to_string()), true, &[]);
                    assert_eq!(queued, Queued::Queued, "message {n}");
                    traffic.sent.store(n + 1, Ordering::Release);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let visiting = {
        let (matches, id, traffic, stop) =
            (matches.clone(), id.clone(), traffic.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Acquire) {
                let p = presence(&format!("visitor{n}"));
                join(&matches, &id, &p).await;
                let reply = matches
                    .signal(&id.to_string(), format!("s{n}"))
                    .await
                    .unwrap();
                traffic.replies.lock().push(reply);
                matches.leave(&id, p.session_id);
                traffic.visitors.lock().push(p.session_id);
                n += 1;
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };
    let clients_alive = || {
        assert!(
            !sending.is_finished() && !visiting.is_finished(),
            "a client failed"
        );
    };
    // The hand-off: the only timeout that can fail the test, and only if nothing moves at all.
    until(
        Duration::from_secs(60),
        "the late executor thread never handed its expensive match off",
        || {
            clients_alive();
            matches.load().moves > 0
        },
    )
    .await;
    let moved_at_visitors = traffic.visitors.lock().len();
    let second = 1 - first;
    until(
        Duration::from_secs(60),
        "the moved match did not run with traffic on its new thread",
        || {
            clients_alive();
            probe.busy_ticks_on(second) >= 5
                && traffic.visitors.lock().len() >= moved_at_visitors + 3
        },
    )
    .await;
    stop.store(true, Ordering::Release);
    sending.await.unwrap();
    visiting.await.unwrap();
    let sent = traffic.sent.load(Ordering::Acquire);
    let visitors = traffic.visitors.lock().clone();
    until(
        Duration::from_secs(60),
        "the last messages and leaves did not arrive",
        || {
            probe.seen.load(Ordering::Acquire) == sent
                && calls.lock().leaves.len() == visitors.len()
        },
    )
    .await;

    // One move, of the expensive match, to the idle thread; the cheap one stayed.
    let load = matches.load();
    assert_eq!(load.moves, 1, "{load:?}");
    assert_eq!(thread_of(&id), second);
    assert_eq!(thread_of(&neighbour), first);
    assert!(
        neighbour_threads.lock().iter().all(|t| *t == first),
        "the cheap match never left its thread"
    );

    let calls = calls.lock().clone();
    // Nothing of the match ran on its old thread once it had run on the new one: its callbacks
    // ran on the first thread, then on the second, never interleaved.
    let threads: Vec<usize> = calls
        .order
        .iter()
        .map(|seen| executor_index(seen.thread.as_deref()))
        .collect();
    let switch = threads
        .iter()
        .position(|t| *t == second)
        .expect("ran on the new thread");
    assert!(switch > 0, "ran on the first thread before");
    assert!(threads[..switch].iter().all(|t| *t == first));
    assert!(
        threads[switch..].iter().all(|t| *t == second),
        "back on the old thread after the move: {:?}",
        &calls.order[switch..]
    );

    // Its state went with it: tick numbers 0, 1, 2, … and its own count agree throughout.
    let ticks = probe.ticks.lock().clone();
    for (i, (tick, count, _, _)) in ticks.iter().enumerate() {
        assert_eq!((*tick, *count), (i as i64, i as i64 + 1), "{ticks:?}");
    }

    // Every message once, in the order sent, on both sides of the move.
    let received: Vec<u64> = ticks
        .iter()
        .flat_map(|(_, _, messages, _)| messages.clone())
        .collect();
    assert_eq!(received, (0..sent).collect::<Vec<_>>());
    assert!(probe.busy_ticks_on(first) > 0 && probe.busy_ticks_on(second) > 0);
    let stats = matches
        .stats()
        .into_iter()
        .find(|s| s.match_id == id.to_string())
        .unwrap();
    assert_eq!(stats.dropped_inputs, 0, "{stats:?}");

    // Joins, signals and leaves: each visitor joined, signalled and left, in that order, on
    // both sides of the move; the replies came back in order.
    let mut expected = vec![Call::Join(sender.session_id)];
    for (n, session) in visitors.iter().enumerate() {
        expected.push(Call::Join(*session));
        expected.push(Call::Signal(format!("s{n}")));
        expected.push(Call::Leave(*session, PresenceReason::Leave));
    }
    let seen: Vec<Call> = calls
        .order
        .iter()
        .filter(|seen| !matches!(seen.call, Call::Tick(_)))
        .map(|seen| seen.call.clone())
        .collect();
    assert_eq!(seen, expected);
    let joins_on = |thread: usize| {
        calls
            .order
            .iter()
            .zip(&threads)
            .filter(|(seen, t)| matches!(seen.call, Call::Join(_)) && **t == thread)
            .count()
    };
    assert!(joins_on(first) > 1 && joins_on(second) > 0);
    let replies = traffic.replies.lock().clone();
    let expected_replies: Vec<String> = (0..visitors.len()).map(|n| format!("got s{n}")).collect();
    assert_eq!(replies, expected_replies);

    matches.stop();
    tokio::task::spawn_blocking(move || executor.join())
        .await
        .unwrap();
}
