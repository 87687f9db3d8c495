//! Per-VM state poisoning (issue 14): after every `InitModule` has run, the intrinsics, their
//! global bindings and the VM's shared objects (`nk`, `ctx.env`) are frozen, so nothing one
//! call changes there reaches the next caller on that VM; ordinary code still overrides
//! inherited members on its own objects, and module state stays writable.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use support::{Harness, Options, build, fixture, json};

async fn one_vm() -> Harness {
    let mut options = Options::new(fixture("poison"));
    options.vms = 1;
    build(options).await.unwrap()
}

async fn assert_clean(h: &Harness, after: &str) {
    let seen = json(&h.call("check", "").await.unwrap());
    for (name, ok) in seen.as_object().unwrap() {
        assert_eq!(
            ok, true,
            "after {after}: {name} was changed for the next caller: {seen}"
        );
    }
}

#[tokio::test]
async fn sloppy_writes_to_intrinsics_and_shared_objects_do_not_reach_the_next_call() {
    let h = one_vm().await;
    assert_clean(&h, "load").await;
    let out = json(&h.call("poison", "").await.unwrap());
    // Sloppy code: writes to frozen objects are ignored, except the overridable members of
    // frozen prototypes, whose setters refuse a write to the prototype itself.
    assert_eq!(out["jsonParse"], "no error", "{out}");
    assert_eq!(out["objectToString"], "threw TypeError", "{out}");
    assert_eq!(out["errorName"], "threw TypeError", "{out}");
    assert_eq!(out["defineOnProto"], "threw TypeError", "{out}");
    assert_clean(&h, "sloppy writes").await;
}

#[tokio::test]
async fn strict_writes_to_intrinsics_and_shared_objects_throw_type_errors() {
    let h = one_vm().await;
    let out = json(&h.call("poison_strict", "").await.unwrap());
    for (name, outcome) in out.as_object().unwrap() {
        assert_eq!(outcome, "threw TypeError", "{name}: {out}");
    }
    assert_clean(&h, "strict writes").await;
}

#[tokio::test]
async fn own_members_override_frozen_prototypes_and_module_state_stays_writable() {
    let h = one_vm().await;
    for n in 1..=2 {
        let out = json(&h.call("ordinary", "").await.unwrap());
        assert_eq!(out["errorName"], "MyError", "{out}");
        assert_eq!(out["errorText"], "MyError: m", "{out}");
        assert_eq!(out["toString"], "mine", "{out}");
        assert_eq!(out["constructor"], "custom", "{out}");
        assert_eq!(out["calls"], n, "{out}");
        assert_eq!(out["cached"], n, "{out}");
    }
    assert_clean(&h, "overrides").await;
}

#[tokio::test]
async fn read_only_globals_off_leaves_the_intrinsics_writable_as_before() {
    let mut options = Options::new(fixture("poison"));
    options.vms = 1;
    options.read_only_globals = false;
    let h = build(options).await.unwrap();
    h.call("poison", "").await.unwrap();
    // The poisoning call replaced the global JSON itself: the next caller gets its fake.
    assert_eq!(h.call("check", "").await.unwrap(), "poisoned");
}
