//! The time budget of Lua calls, with no hook set while a call is within its budget.
//!
//! LuaJIT runs every VM instruction through its hook path (`lj_vm_inshook`, a C call per
//! instruction) for as long as a count hook is set, whatever the count: a hook every 10,000
//! instructions, which this engine used to keep set, made each instruction of every call pay
//! for a check that almost never fired. Here no hook is set while calls keep their budget:
//!
//! - Each poll of a call publishes the call's deadline in its VM's [`Watch`] (an atomic), and
//!   the thread-local [`RUNNING`] names the VM polling on this thread.
//! - One watcher thread per process ([`Watcher`]) looks at every VM's published deadline: it
//!   sleeps until the earliest one (at most [`LATE_BOUND`], so a call started after its look
//!   is seen in time), and for a poll past its deadline it signals the VM's thread
//!   ([`SIGNAL`]). With no call polled for [`IDLE_AFTER`], it parks until a call starts.
//! - The signal handler, on that thread, sets a count hook of one instruction on the Lua state
//!   the thread is running — exactly what LuaJIT's own `luajit` front end does for Ctrl-C
//!   (`lua_sethook` from a signal handler): the handler runs between two instructions of its
//!   own thread, so LuaJIT's unsynchronised hook fields are never written from two threads at
//!   once, and whatever the interrupted code writes last wins (a lost arm is re-armed at the
//!   watcher's next look).
//! - The hook ([`budget_hook`]) raises the budget error once per arm, at the next instruction;
//!   the sandbox's `pcall`/`xpcall`/`coroutine.resume` wrappers raise it again up to the call
//!   entry. The poll's end (back in Rust) takes the hook off again.
//!
//! A runaway is stopped at its deadline plus the watcher's wake-up (≤ [`LATE_BOUND`]); the
//! checks at `nk` calls and at long standard C functions (`super::c_functions`) still read the
//! deadline themselves, at once.

// The hook and the signal handler are C callbacks on raw Lua states: each unsafe block says
// which invariant it rests on.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use mlua::{Lua, Value, ffi};

use super::BudgetExceeded;

/// The watcher's longest sleep while calls run: how late past its deadline a call that started
/// after the watcher's last look can be stopped (scheduling aside).
pub(crate) const LATE_BOUND: Duration = Duration::from_millis(5);

/// With no call polled for this long, the watcher parks until a call starts.
const IDLE_AFTER: Duration = Duration::from_millis(100);

/// The longest park: a backstop only (a start always unparks a parked watcher).
const PARKED_CHECK: Duration = Duration::from_secs(1);

/// The signal that makes a thread arm the hook on the Lua state it runs. `SIGURG`'s default
/// action is to ignore it and nothing in the server uses it (out-of-band socket data is never
/// asked for), as the Go runtime reasons when it preempts goroutines with it.
const SIGNAL: c_int = libc::SIGURG;

/// The registry field holding the budget error value the hook raises.
const ERROR_FIELD: &std::ffi::CStr = c"metafi.budget_error";

thread_local! {
    /// The VM whose call this thread is polling now, for the signal handler and the hook;
    /// null between polls. Const-initialised with no destructor, so reading it in a signal
    /// handler touches only the thread's static TLS block.
    static RUNNING: Cell<*const Watch> = const { Cell::new(std::ptr::null()) };
}

/// A VM's deadline: the cell its own thread reads (the `nk` functions, the checked C
/// functions, the bounded string functions) and the [`Watch`] the watcher reads.
pub(crate) struct Deadline {
    at: Cell<Option<Instant>>,
    watch: Arc<Watch>,
}

impl Deadline {
    /// The deadline of `lua`'s calls, watched from now on (`lua` must run on this thread).
    pub(crate) fn new(lua: &Lua) -> mlua::Result<Deadline> {
        let budget = Value::Error(Box::new(mlua::Error::external(BudgetExceeded)));
        lua.set_named_registry_value(ERROR_FIELD.to_str().unwrap_or_default(), budget)?;
        let mut state = std::ptr::null_mut();
        // SAFETY: the closure only records the state pointer; `exec_raw` pushes nothing.
        unsafe { lua.exec_raw::<()>((), |s| state = s)? };
        let watcher = Watcher::get();
        let watch = Arc::new(Watch {
            epoch: watcher.epoch,
            polling: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            polls_seen: AtomicU64::new(0),
            state: AtomicPtr::new(state),
            // SAFETY: `pthread_self` has no preconditions.
            thread: unsafe { libc::pthread_self() },
            armed: AtomicBool::new(false),
            raised: AtomicBool::new(false),
        });
        watcher.register(watch.clone());
        Ok(Deadline {
            at: Cell::new(None),
            watch,
        })
    }

    /// Whether the running call is past its deadline.
    pub(crate) fn is_over(&self) -> bool {
        self.at.get().is_some_and(|at| Instant::now() >= at)
    }

    /// Sets the running call's deadline (`None`: no call runs) and returns the previous one.
    pub(crate) fn replace(&self, at: Option<Instant>) -> Option<Instant> {
        self.publish(at);
        self.at.replace(at)
    }

    pub(crate) fn set(&self, at: Option<Instant>) {
        self.replace(at);
    }

    fn publish(&self, at: Option<Instant>) {
        let watch = &*self.watch;
        match at {
            Some(at) => {
                RUNNING.set(watch);
                watch.polls.store(
                    watch.polls.load(Ordering::Relaxed).wrapping_add(1),
                    Ordering::Relaxed,
                );
                // SeqCst with the watcher's `asleep` (see `Watcher::park`): either it sees this
                // poll or this start sees it parked and unparks it.
                watch.polling.store(watch.mark(at), Ordering::SeqCst);
                Watcher::get().wake_if_parked();
            }
            None => {
                // The handler acts only while `RUNNING` names a VM: once it is cleared, no
                // signal can arm the hook this poll's end is about to take off.
                RUNNING.set(std::ptr::null());
                std::sync::atomic::compiler_fence(Ordering::SeqCst);
                watch.polling.store(0, Ordering::Release);
                if watch.armed.load(Ordering::Relaxed) {
                    watch.disarm();
                }
            }
        }
    }

    /// Whether the budget hook is set on this VM now (tests).
    #[cfg(test)]
    pub(crate) fn hook_is_set(&self) -> bool {
        // SAFETY: the state lives as long as this deadline's VM, on this thread.
        unsafe { ffi::lua_gethookmask(self.watch.state.load(Ordering::Relaxed)) != 0 }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        Watcher::get().unregister(&self.watch);
    }
}

/// What the watcher and the signal handler know of one VM.
struct Watch {
    /// Reference point of `polling` (the watcher's).
    epoch: Instant,
    /// Deadline of the poll running now, in microseconds after `epoch` plus one; 0: none.
    polling: AtomicU64,
    /// Polls started; written by the VM's thread only. The watcher counts a VM busy when it
    /// moved since its last look, so it does not park under a stream of short calls.
    polls: AtomicU64,
    /// `polls` at the watcher's last look; written by the watcher only.
    polls_seen: AtomicU64,
    /// The Lua state (hooks are per LuaJIT state, shared by its coroutines).
    state: AtomicPtr<ffi::lua_State>,
    /// The VM's thread (a Lua state never leaves the thread that made it).
    thread: libc::pthread_t,
    /// The hook was set by the signal handler and not yet taken off.
    armed: AtomicBool,
    /// The hook raised the budget error since it was last armed.
    raised: AtomicBool,
}

// SAFETY: `thread` is an opaque id only passed to `pthread_kill`; everything else is atomic.
unsafe impl Send for Watch {}
// SAFETY: as above.
unsafe impl Sync for Watch {}

impl Watch {
    fn mark(&self, at: Instant) -> u64 {
        micros(at.saturating_duration_since(self.epoch)).saturating_add(1)
    }

    /// Whether the poll running now is past its deadline at `now` (µs after `epoch`).
    fn overdue(&self, now: u64) -> bool {
        let polling = self.polling.load(Ordering::Acquire);
        polling != 0 && now >= polling - 1
    }

    /// Sets the hook (in the signal handler, on the VM's thread).
    fn arm(&self) {
        self.raised.store(false, Ordering::Relaxed);
        self.armed.store(true, Ordering::Relaxed);
        // SAFETY: called on the VM's thread while it polls a call of this state (`RUNNING`),
        // so the state is alive; `lua_sethook` only writes the state's hook fields and
        // dispatch table, as LuaJIT's own front end does from its SIGINT handler.
        unsafe {
            ffi::lua_sethook(
                self.state.load(Ordering::Relaxed),
                Some(budget_hook),
                ffi::LUA_MASKCOUNT,
                1,
            );
        }
    }

    /// Takes the hook off (on the VM's thread, outside any poll).
    fn disarm(&self) {
        // SAFETY: on the VM's thread, between polls: no Lua code runs on the state and no
        // signal handler touches it (`RUNNING` is cleared first).
        unsafe { ffi::lua_sethook(self.state.load(Ordering::Relaxed), None, 0, 0) };
        self.armed.store(false, Ordering::Relaxed);
        self.raised.store(false, Ordering::Relaxed);
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The hook the signal handler sets: raises the budget error once per arm if the running call
/// is past its deadline, else lets the instruction run.
unsafe extern "C-unwind" fn budget_hook(state: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    let watch = RUNNING.get();
    if watch.is_null() {
        return;
    }
    // SAFETY: `RUNNING` names a VM only while this thread polls one of its calls.
    let watch = unsafe { &*watch };
    let now = micros(watch.epoch.elapsed());
    if watch.raised.load(Ordering::Relaxed) || !watch.overdue(now) {
        return;
    }
    watch.raised.store(true, Ordering::Relaxed);
    // SAFETY: a hook may raise an error (LuaJIT's front end does, from its SIGINT hook); a hook
    // has LUA_MINSTACK free slots and this pushes one value; no Rust value that needs dropping
    // is alive across `lua_error` (hence the "C-unwind" ABI).
    unsafe {
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, ERROR_FIELD.as_ptr());
        ffi::lua_error(state);
    }
}

/// The signal handler: arms the hook on the Lua state this thread polls now, if its call is
/// past its deadline. Async-signal-safe: a thread-local read, a clock read (vDSO), atomics
/// and `lua_sethook`.
extern "C" fn on_signal(_: c_int) {
    let watch = RUNNING.get();
    if watch.is_null() {
        return;
    }
    // SAFETY: `RUNNING` names a VM only while this thread polls one of its calls, and this
    // handler runs on this thread.
    let watch = unsafe { &*watch };
    if watch.overdue(micros(watch.epoch.elapsed())) {
        watch.arm();
    }
}

/// The process's one watcher of Lua deadlines (see the module documentation).
struct Watcher {
    epoch: Instant,
    vms: Mutex<Vec<Arc<Watch>>>,
    /// Set while the watcher parks with no call running; a start unparks it.
    asleep: AtomicBool,
    thread: Thread,
}

static WATCHER: OnceLock<Watcher> = OnceLock::new();

impl Watcher {
    fn get() -> &'static Watcher {
        WATCHER.get_or_init(|| {
            install_handler();
            let thread = std::thread::Builder::new()
                .name("metafi-lua-budget".into())
                .spawn(|| Watcher::get().run())
                // Invariant: without the watcher no Lua call could be stopped; a process that
                // cannot start one thread cannot serve either.
                .expect("cannot start the Lua budget watcher thread");
            Watcher {
                epoch: Instant::now(),
                vms: Mutex::new(Vec::new()),
                asleep: AtomicBool::new(false),
                thread: thread.thread().clone(),
            }
        })
    }

    fn register(&self, watch: Arc<Watch>) {
        self.vms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(watch);
    }

    /// Forgets a VM. Held under the same lock as the watcher's signals, so a VM's thread is
    /// never signalled after its VM is gone.
    fn unregister(&self, watch: &Arc<Watch>) {
        self.vms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|w| !Arc::ptr_eq(w, watch));
    }

    fn wake_if_parked(&self) {
        if self.asleep.load(Ordering::SeqCst) && self.asleep.swap(false, Ordering::SeqCst) {
            self.thread.unpark();
        }
    }

    fn run(&self) {
        let mut idle_since = Instant::now();
        loop {
            let now = Instant::now();
            let (busy, next) = self.look(now);
            if busy {
                idle_since = now;
            } else if now.duration_since(idle_since) >= IDLE_AFTER {
                self.park();
                idle_since = Instant::now();
                continue;
            }
            std::thread::park_timeout(next.map_or(LATE_BOUND, |at| {
                at.saturating_duration_since(Instant::now()).min(LATE_BOUND)
            }));
        }
    }

    /// Signals the thread of every poll past its deadline; returns whether any VM ran a call
    /// since the last look and the earliest deadline still ahead.
    fn look(&self, now: Instant) -> (bool, Option<Instant>) {
        let now_us = micros(now.saturating_duration_since(self.epoch));
        let vms = self
            .vms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut busy = false;
        let mut next: Option<Instant> = None;
        for watch in vms.iter() {
            let polls = watch.polls.load(Ordering::Relaxed);
            if watch.polls_seen.swap(polls, Ordering::Relaxed) != polls {
                busy = true;
            }
            let polling = watch.polling.load(Ordering::Acquire);
            if polling == 0 {
                continue;
            }
            busy = true;
            if now_us >= polling - 1 {
                // SAFETY: the VM is registered (its thread is alive: a VM unregisters before
                // its thread can end, under this lock); the handler checks the deadline again.
                unsafe { libc::pthread_kill(watch.thread, SIGNAL) };
            } else {
                let at = self.epoch + Duration::from_micros(polling - 1);
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        (busy, next)
    }

    /// Parks until a call starts (or the backstop passes). `asleep` is set before the last
    /// look, and a start stores its deadline before it reads `asleep` (both SeqCst): a start
    /// either is seen by that look or sees `asleep` and unparks.
    fn park(&self) {
        self.asleep.store(true, Ordering::SeqCst);
        let running = self
            .vms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|w| w.polling.load(Ordering::SeqCst) != 0);
        if !running {
            std::thread::park_timeout(PARKED_CHECK);
        }
        self.asleep.store(false, Ordering::SeqCst);
    }
}

/// Installs [`on_signal`] for [`SIGNAL`], restarting interrupted system calls.
fn install_handler() {
    // SAFETY: a zeroed `sigaction` is a valid value to fill; the handler is async-signal-safe
    // (see `on_signal`).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(SIGNAL, &action, &mut previous) != 0 {
            tracing::error!(
                signal = SIGNAL,
                "cannot install the Lua budget signal handler: runaway Lua calls are stopped only by the pool's watchdog (runtime.watchdog_grace_ms)"
            );
        } else if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN {
            tracing::warn!(
                signal = SIGNAL,
                "replaced another SIGURG handler of this process with the Lua budget watcher's: whatever installed it no longer receives SIGURG"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use mlua::{LuaOptions, StdLib};

    use super::*;

    fn vm() -> (Lua, Rc<Deadline>) {
        let lua =
            Lua::new_with(StdLib::TABLE | StdLib::STRING, LuaOptions::new()).expect("a Lua state");
        let deadline = Rc::new(Deadline::new(&lua).expect("a watched deadline"));
        (lua, deadline)
    }

    /// Calls `chunk` as one poll with `budget`, as the engine does.
    fn poll(lua: &Lua, deadline: &Deadline, budget: Duration, chunk: &str) -> mlua::Result<()> {
        let function = lua.load(chunk).into_function()?;
        let previous = deadline.replace(Some(Instant::now() + budget));
        let result = function.call::<()>(());
        deadline.set(previous);
        result
    }

    #[test]
    fn a_call_within_its_budget_runs_with_no_hook_set() {
        let (lua, deadline) = vm();
        let probe = deadline.clone();
        let seen = lua
            .create_function(move |_, ()| Ok(probe.hook_is_set()))
            .expect("the probe");
        lua.globals().set("hooked", seen).expect("a global");
        let function = lua
            .load("local n = 0 for i = 1, 1000 do n = n + i end return hooked()")
            .into_function()
            .expect("compiles");
        deadline.replace(Some(Instant::now() + Duration::from_secs(10)));
        let hooked: bool = function.call(()).expect("the call returns");
        deadline.set(None);
        assert!(
            !hooked,
            "no instruction hook while the call keeps its budget"
        );
    }

    #[test]
    fn a_spinning_call_is_stopped_past_its_deadline_and_the_hook_is_taken_off_after() {
        let (lua, deadline) = vm();
        let started = Instant::now();
        let error = poll(
            &lua,
            &deadline,
            Duration::from_millis(50),
            "while true do end",
        )
        .expect_err("the loop is stopped");
        assert!(crate::is_budget(&error), "the budget error: {error}");
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "not before its deadline"
        );
        assert!(
            !deadline.hook_is_set(),
            "the hook is off once the poll ended"
        );
        poll(
            &lua,
            &deadline,
            Duration::from_secs(10),
            "local n = 0 for i = 1, 100 do n = n + i end",
        )
        .expect("the next call on the same state runs");
    }

    #[test]
    fn spinning_calls_on_many_threads_are_each_stopped() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let (lua, deadline) = vm();
                    for _ in 0..3 {
                        let error = poll(
                            &lua,
                            &deadline,
                            Duration::from_millis(20),
                            "while true do end",
                        )
                        .expect_err("the loop is stopped");
                        assert!(crate::is_budget(&error), "the budget error: {error}");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("every thread's loops were stopped");
        }
    }
}
