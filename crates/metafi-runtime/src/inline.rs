//! Calls without thread hops: a script call runs on the tokio IO worker that received it, in a
//! VM that belongs to that thread (design: `docs/RUNTIME.md`, "Calls without thread hops").
//!
//! Each engine's pool owns one [`Inline`]; [`Inline::try_call`] runs a call in this thread's VM
//! of the engine (built lazily, the same `create_vm` as a pool VM) or declines, and the pool
//! then takes the call as before. A call that never waits finishes in its first poll. A call
//! that waits (an `nk` function doing IO) cannot move to another VM, so its thread hands its
//! tokio run queue to another thread (`tokio::task::block_in_place`) and parks until the IO is
//! done or the deadline passes. The pool's watchdog also watches inline calls; a wedged one
//! switches the inline path off for its engine.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::context::CallContext;
use crate::error::ScriptError;
use crate::host::{EngineFactory, EngineVm, VmSetup};
use crate::pool::{Answer, Work};
use crate::watchdog::{ThreadWatch, Watched};

/// The inline path of one engine's pool.
pub(crate) struct Inline {
    engine: &'static str,
    factory: Arc<dyn EngineFactory>,
    setup: VmSetup,
    /// Most VMs of this engine on IO threads at once (`runtime.inline_vms`); 0 = off.
    max_vms: usize,
    /// `VmSetup::index` of the first inline VM (after the pool's).
    first_index: usize,
    /// Inline VMs alive now (a thread's VM is dropped with its thread).
    vms: AtomicUsize,
    /// Inline VMs ever built (for their index).
    built: AtomicUsize,
    /// Cleared when the watchdog finds a wedged inline call, and at shutdown.
    enabled: AtomicBool,
    /// The RPC ids the pool's VMs registered; an inline VM must register the same.
    expected: OnceLock<Vec<String>>,
    /// Watches of the threads that have a VM of this engine.
    watches: parking_lot::Mutex<Vec<Weak<ThreadWatch>>>,
    /// Inline calls running now (shutdown waits for them).
    in_flight: AtomicUsize,
    /// Calls that ran on the inline path, since start.
    calls: AtomicU64,
}

/// One thread's VM of one engine.
struct Slot {
    owner: Weak<Inline>,
    vm: Rc<dyn EngineVm>,
    watch: Arc<ThreadWatch>,
    busy: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            owner.vms.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

thread_local! {
    /// This thread's inline VMs, one per engine pool.
    static SLOTS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
    /// Inline calls running on this thread now: a blocking wait inside one must first hand
    /// the thread's tokio work to another thread ([`may_block`]).
    static ACTIVE: Cell<u32> = const { Cell::new(0) };
}

/// Runs `wait`, a blocking wait (a JavaScript `nk` function waiting for its IO). On an IO
/// worker running an inline call, the worker's other tasks first move to another thread
/// (`tokio::task::block_in_place`), so the wait stalls no other socket; elsewhere (a VM
/// thread, a match executor) it just runs.
pub fn may_block<R>(wait: impl FnOnce() -> R) -> R {
    if ACTIVE.with(Cell::get) > 0 {
        tokio::task::block_in_place(wait)
    } else {
        wait()
    }
}

/// Whether this thread runs an inline call now (tests and diagnostics).
pub fn on_inline_call() -> bool {
    ACTIVE.with(Cell::get) > 0
}

enum Found {
    Ready(Rc<dyn EngineVm>, Arc<ThreadWatch>),
    Busy,
    Missing,
}

/// Undoes a call's marks however it ends (a panic included).
struct Running<'a> {
    inline: &'a Arc<Inline>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        ACTIVE.with(|active| active.set(active.get().saturating_sub(1)));
        self.inline.in_flight.fetch_sub(1, Ordering::AcqRel);
        let id = Arc::as_ptr(self.inline);
        // A VM whose thread the watchdog gave up on is not reused.
        let dropped = SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let at = slots
                .iter()
                .position(|s| std::ptr::eq(s.owner.as_ptr(), id))?;
            if slots[at].watch.is_abandoned() {
                Some(slots.swap_remove(at))
            } else {
                slots[at].busy = false;
                None
            }
        });
        drop(dropped);
    }
}

impl Inline {
    pub(crate) fn new(
        factory: Arc<dyn EngineFactory>,
        setup: VmSetup,
        max_vms: usize,
        first_index: usize,
    ) -> Inline {
        Inline {
            engine: factory.name(),
            factory,
            setup,
            max_vms,
            first_index,
            vms: AtomicUsize::new(0),
            built: AtomicUsize::new(0),
            enabled: AtomicBool::new(max_vms > 0),
            expected: OnceLock::new(),
            watches: parking_lot::Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// Calls that ran on the inline path since start.
    pub(crate) fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Inline VMs alive now.
    pub(crate) fn vms(&self) -> usize {
        self.vms.load(Ordering::Acquire)
    }

    /// The RPC ids every inline VM must register (the pool's VM 0's, sorted).
    pub(crate) fn expect(&self, ids: Vec<String>) {
        let _ = self.expected.set(ids);
    }

    /// Runs the call on this thread if it can; otherwise hands its parts back for the pool.
    #[allow(clippy::type_complexity)]
    pub(crate) fn try_call(
        self: &Arc<Self>,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        payload: Work,
        started: Option<Instant>,
    ) -> Result<Result<Answer, ScriptError>, (Arc<str>, Arc<CallContext>, Work)> {
        if !self.enabled.load(Ordering::Acquire) || !on_multi_thread_worker() {
            return Err((id, ctx, payload));
        }
        let (vm, watch) = match self.find() {
            Found::Ready(vm, watch) => (vm, watch),
            Found::Busy => return Err((id, ctx, payload)),
            Found::Missing => match self.build() {
                Some(found) => found,
                None => return Err((id, ctx, payload)),
            },
        };
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.calls.fetch_add(1, Ordering::Relaxed);
        ACTIVE.with(|active| active.set(active.get() + 1));
        let _running = Running { inline: self };
        // The budget counts from when the caller began the call: a hook's host read the clock
        // for its metric already (`RuntimeHooks::run`).
        let deadline = started.unwrap_or_else(Instant::now) + self.setup.limits.call_timeout;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let call = payload.start(vm, id, ctx, deadline);
            let future = Watched::new(call, watch, deadline);
            run_here(future, deadline).unwrap_or(Err(ScriptError::Timeout))
        }));
        Ok(outcome.unwrap_or_else(|panic| {
            Err(ScriptError::Failed {
                message: "RPC function failed.".into(),
                detail: crate::runtime::panic_text(panic.as_ref()),
            })
        }))
    }

    /// This thread's VM of this engine, marked busy; drops VMs of pools that are gone.
    fn find(self: &Arc<Self>) -> Found {
        let id = Arc::as_ptr(self);
        let stale: Vec<Slot> = SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let mut stale = Vec::new();
            let mut i = 0;
            while i < slots.len() {
                let slot = &slots[i];
                let live = slot
                    .owner
                    .upgrade()
                    .is_some_and(|o| o.enabled.load(Ordering::Acquire));
                if !live && !slot.busy {
                    stale.push(slots.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            stale
        });
        // Dropped outside the borrow: a VM's drop may run arbitrary destructors.
        drop(stale);
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            match slots
                .iter_mut()
                .find(|s| std::ptr::eq(s.owner.as_ptr(), id))
            {
                Some(slot) if slot.busy => Found::Busy,
                Some(slot) => {
                    slot.busy = true;
                    Found::Ready(slot.vm.clone(), slot.watch.clone())
                }
                None => Found::Missing,
            }
        })
    }

    /// Builds this thread's VM if the engine's cap allows, and marks it busy.
    fn build(self: &Arc<Self>) -> Option<(Rc<dyn EngineVm>, Arc<ThreadWatch>)> {
        let reserved = self
            .vms
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_vms).then_some(n + 1)
            })
            .is_ok();
        if !reserved {
            return None;
        }
        let index = self.first_index + self.built.fetch_add(1, Ordering::AcqRel);
        let setup = VmSetup {
            index,
            ..self.setup.clone()
        };
        let modules = u32::try_from(setup.modules.len().max(1)).unwrap_or(u32::MAX);
        let deadline = Instant::now() + self.setup.limits.load_timeout.saturating_mul(modules);
        let engine = self.engine;
        // Built right here: handing the worker on first (block_in_place) would leave the VM on
        // a thread that is no longer the worker, and the next worker thread would need its
        // own. Only if loading must wait for IO (load-time `nk` calls) is the worker handed on.
        ACTIVE.with(|active| active.set(active.get() + 1));
        let built = std::panic::catch_unwind(AssertUnwindSafe(|| {
            run_here(self.factory.create_vm(setup), deadline)
        }));
        ACTIVE.with(|active| active.set(active.get().saturating_sub(1)));
        let vm = match built {
            Ok(Some(Ok(vm))) => vm,
            outcome => {
                self.vms.fetch_sub(1, Ordering::AcqRel);
                let error = match outcome {
                    Ok(Some(Err(e))) => e.to_string(),
                    Ok(None) => "loading the modules ran past the load budget".to_owned(),
                    _ => "the engine panicked while loading the modules".to_owned(),
                };
                tracing::error!(engine, vm = index, %error, "cannot build a script VM on an IO thread; this thread's calls use the VM pool");
                return None;
            }
        };
        if let Some(expected) = self.expected.get() {
            let mut ids: Vec<String> = vm.registrations().rpcs.into_iter().map(|r| r.id).collect();
            ids.sort_unstable();
            if &ids != expected {
                self.vms.fetch_sub(1, Ordering::AcqRel);
                tracing::error!(
                    engine,
                    vm = index,
                    "a script VM built on an IO thread registered other RPCs than the pool's VMs; this thread's calls use the VM pool"
                );
                return None;
            }
        }
        let watch = Arc::new(ThreadWatch::new());
        {
            let mut watches = self.watches.lock();
            watches.retain(|w| w.strong_count() > 0);
            watches.push(Arc::downgrade(&watch));
        }
        tracing::debug!(engine, vm = index, "script VM built on an IO thread");
        SLOTS.with(|slots| {
            slots.borrow_mut().push(Slot {
                owner: Arc::downgrade(self),
                vm: vm.clone(),
                watch: watch.clone(),
                busy: true,
            });
        });
        Some((vm, watch))
    }

    /// Called by the pool's watchdog: a poll of an inline call still running `grace` past its
    /// deadline means the engine cannot stop it. The IO thread cannot be replaced: its VM is
    /// given up and the inline path of this engine is switched off, so new calls use the pool.
    pub(crate) fn check_wedged(&self, now: Instant, grace: Duration) {
        let wedged: Vec<Arc<ThreadWatch>> = self
            .watches
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|w| !w.is_abandoned() && w.overdue(now, grace))
            .collect();
        if wedged.is_empty() {
            return;
        }
        self.enabled.store(false, Ordering::Release);
        for watch in wedged {
            watch.abandon();
            metrics::counter!("metafi_runtime_vms_wedged_total", "runtime" => self.engine)
                .increment(1);
            tracing::error!(
                engine = self.engine,
                grace_ms = grace.as_millis() as u64,
                "a script call running on an IO thread is still running past its deadline and cannot be interrupted; that thread is lost until the call returns, and calls of this engine now use the VM pool (runtime.inline_calls, runtime.watchdog_grace_ms)"
            );
        }
    }

    /// Stops taking calls and waits up to `grace` for the inline calls running now.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.enabled.store(false, Ordering::Release);
        let until = Instant::now() + grace;
        while self.in_flight.load(Ordering::Acquire) > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// Whether this thread runs a task of a multi-thread tokio runtime, where
/// `block_in_place` can hand its work to another thread.
fn on_multi_thread_worker() -> bool {
    tokio::task::try_id().is_some()
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Polls `future` once here; if it must wait, hands this worker's tasks to another thread and
/// waits for it on this one. `None` when `deadline` passes first (the future is dropped).
fn run_here<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let first =
        crate::block::with_waker(|waker| future.as_mut().poll(&mut Context::from_waker(waker)));
    match first {
        Poll::Ready(value) => Some(value),
        Poll::Pending => {
            tokio::task::block_in_place(|| crate::block_on_until(future.as_mut(), Some(deadline)))
        }
    }
}
