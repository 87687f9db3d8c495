//! Runaway scripts of every kind (issue 14): whatever a call does, it ends at its budget with
//! code 4 (or code 8 at the memory cap), and the next call on the same VM works.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::time::Duration;

use metafi_core::CoreError;
use metafi_proto::Code;
use support::{Harness, Options, build, fixture};

/// Generous bound on any one call: only a hang guard, never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// One VM, so every call below runs on the VM the previous one ran on.
async fn one_vm(budget: Duration) -> Harness {
    let mut options = Options::new(fixture("runaway"));
    options.vms = 1;
    options.call_timeout = budget;
    options.memory_limit_bytes = 64 << 20;
    build(options).await.unwrap()
}

async fn call(h: &Harness, id: &str) -> Result<String, CoreError> {
    call_with(h, id, "").await
}

async fn call_with(h: &Harness, id: &str, payload: &str) -> Result<String, CoreError> {
    tokio::time::timeout(HANG_GUARD, h.call(id, payload))
        .await
        .unwrap_or_else(|_| panic!("'{id}({payload})' did not end"))
}

/// Asserts code 4 with the runaway message, then that the same VM serves call `n`.
async fn assert_stopped_then_served(h: &Harness, id: &str, n: &mut u32) {
    match call(h, id).await {
        Err(CoreError::Status { code, message }) => {
            assert_eq!(code, Code::DeadlineExceeded, "{id}: {message}");
            assert_eq!(
                message,
                format!("RPC function '{id}' exceeded its time budget of 200 ms."),
                "{id}: the same message as a runaway loop"
            );
        }
        other => panic!("{id}: expected code 4, got {other:?}"),
    }
    *n += 1;
    assert_eq!(
        call(h, "count").await.unwrap(),
        n.to_string(),
        "after {id}: the same VM serves the next call"
    );
}

#[tokio::test]
async fn a_promise_that_never_settles_ends_at_the_budget_with_code_4() {
    let h = one_vm(Duration::from_millis(200)).await;
    let mut n = 0;
    for id in ["never_settles", "awaits_forever", "awaits_chain"] {
        assert_stopped_then_served(&h, id, &mut n).await;
    }
}

#[tokio::test]
async fn runaway_loops_of_every_kind_end_at_the_budget_with_code_4() {
    let h = one_vm(Duration::from_millis(200)).await;
    let mut n = 0;
    for id in [
        "spin",
        // The interrupt is uncatchable: neither catch nor finally can keep the call going.
        "loop_in_catch",
        "loop_in_finally",
        // QuickJS's regex engine polls the interrupt handler while it backtracks.
        "regex_backtracking",
        "slow_sort",
        "deep_recursion",
        "getter_loop",
        "proxy_loop",
        "microtask_loop",
        "microtask_chain",
    ] {
        assert_stopped_then_served(&h, id, &mut n).await;
    }
}

#[tokio::test]
async fn huge_strings_and_json_end_at_the_memory_cap_with_code_8() {
    // A budget long enough that the memory cap, not the clock, stops them.
    let h = one_vm(Duration::from_secs(30)).await;
    let mut n = 0;
    for id in ["huge_repeat", "huge_stringify"] {
        match call(&h, id).await {
            Err(e) => assert_eq!(e.code(), Code::ResourceExhausted, "{id}: {e:?}"),
            Ok(out) => panic!("{id}: expected code 8, got Ok({out})"),
        }
        n += 1;
        assert_eq!(
            call(&h, "count").await.unwrap(),
            n.to_string(),
            "after {id}"
        );
    }
}

/// QuickJS runs these built-ins as C loops over `length` that never poll the interrupt
/// handler: on an array-like or sparse array of length 2^32 or 2^53 they held the VM thread
/// for ever, past any budget. They are refused at once instead.
#[tokio::test]
async fn array_builtins_over_huge_lengths_are_refused_instead_of_looping_for_ever() {
    let h = one_vm(Duration::from_millis(200)).await;
    let mut n = 0;
    for case in [
        "reverse",
        "copyWithin",
        "sort",
        "fill",
        "join",
        "sparseJoin",
        "slice",
        "splice",
        "shift",
        "unshift",
        "flat",
        "concat",
        "toString",
    ] {
        match call_with(&h, "builtin_loop", case).await {
            Err(CoreError::Status { code, message }) => {
                assert_eq!(code, Code::Internal, "{case}: {message}");
                assert!(
                    message.contains("refused instead of looping over holes"),
                    "{case}: {message}"
                );
            }
            other => panic!("{case}: expected a RangeError, got {other:?}"),
        }
        n += 1;
        assert_eq!(
            call(&h, "count").await.unwrap(),
            n.to_string(),
            "after {case}"
        );
    }
    // The built-ins that poll the interrupt end at the budget as loops do.
    for case in ["indexOf", "lastIndexOf", "includes"] {
        let result = call_with(&h, "builtin_loop", case).await;
        assert_eq!(result.unwrap_err().code(), Code::DeadlineExceeded, "{case}");
    }
    // The wrappers look like the built-ins: name, arity, not constructors.
    assert_eq!(
        call_with(&h, "builtin_loop", "shape").await.unwrap(),
        "reverse|0|1|1|false|false"
    );
    // Real arrays are served by the same built-ins as before.
    assert_eq!(
        call_with(&h, "builtin_loop", "dense").await.unwrap(),
        "1-2|999|123|123|1,2"
    );
}

/// Every job queues two more: the budget interrupts one job in thousands, so jobs were left in
/// QuickJS's queue (which cannot be emptied) and every later call on the VM ran them and
/// timed out. The VM is replaced instead: a fresh one, built from the same modules, serves the
/// next call.
#[tokio::test]
async fn a_promise_job_flood_replaces_its_vm_and_the_next_calls_are_served() {
    let h = one_vm(Duration::from_millis(200)).await;
    assert_eq!(call(&h, "count").await.unwrap(), "1");
    let result = call(&h, "job_bomb").await;
    assert_eq!(result.unwrap_err().code(), Code::DeadlineExceeded);
    for n in 1..=3 {
        assert_eq!(
            call(&h, "count").await.unwrap(),
            n.to_string(),
            "a fresh VM (module state starts over) serves every later call"
        );
    }
}
