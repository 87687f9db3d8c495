//! The VM pool of one engine: N OS threads, each owning one VM with every module loaded, a
//! current-thread tokio runtime and a `LocalSet`. Calls go to the least-loaded VM through a
//! bounded queue; on its VM a call runs as a local task, so calls awaiting `nk` IO interleave
//! while only one executes script code at a time. A VM that is busy with a long call delays
//! only the calls queued on it; the dispatcher sends new calls to the others. A VM that stays
//! busy past a call's deadline plus `runtime.watchdog_grace_ms` is replaced
//! (`crate::watchdog`).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use metafi_core::HookValue;
use tokio::sync::{Semaphore, oneshot, watch};

use crate::context::CallContext;
use crate::error::{LoadError, ScriptError};
use crate::host::{
    EngineFactory, EngineVm, HookArgs, LocalFuture, Registrations, RpcCall, VmSetup,
};
use crate::inline::Inline;
use crate::job_queue::{JobQueue, PushError};
use crate::watchdog::{ThreadWatch, Watched};

/// Sizes of one engine's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// VM threads.
    pub vms: usize,
    /// Calls in flight on one VM at once (interleaved while they await IO).
    pub max_calls_per_vm: usize,
    /// Calls that may wait for a VM, over all VMs; beyond it callers get ResourceExhausted.
    pub queue_capacity: usize,
}

/// The inline path of one engine (`crate::inline`): how many VMs it may build on IO threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct InlineConfig {
    /// Most VMs on IO threads at once; 0 = every call takes the pool (a thread hop).
    pub max_vms: usize,
}

/// Why a call could not be handed to a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DispatchError {
    QueueFull,
    Stopped,
}

pub(crate) struct VmPool {
    inner: Arc<PoolInner>,
    registrations: Registrations,
}

/// What the pool, its watchdog and its VM threads share.
struct PoolInner {
    engine: &'static str,
    factory: Arc<dyn EngineFactory>,
    setup: VmSetup,
    max_calls: usize,
    workers: Vec<Worker>,
    stop: watch::Sender<bool>,
    /// `runtime.watchdog_grace_ms`: how long a call may keep its VM thread busy past its
    /// deadline before the VM is declared wedged and replaced.
    watchdog_grace: Duration,
    /// Calls run on the IO thread that received them (`crate::inline`).
    inline: Arc<Inline>,
}

/// One VM slot: its queue, and the thread serving it now.
struct Worker {
    queue: Arc<JobQueue<Job>>,
    /// Calls sent to this VM and not yet answered; the dispatcher picks the smallest.
    load: Arc<AtomicUsize>,
    /// The thread serving this slot; replaced when it wedges.
    current: parking_lot::Mutex<Arc<ThreadWatch>>,
    /// Bumped each time the thread is replaced: callers of calls the wedged thread had taken
    /// stop waiting for them.
    replaced: watch::Sender<u64>,
    /// Resolved by the current thread when it has finished its calls and dropped its VM.
    finished: parking_lot::Mutex<Option<oneshot::Receiver<()>>>,
}

struct Job {
    id: Arc<str>,
    ctx: Arc<CallContext>,
    payload: Work,
    reply: oneshot::Sender<Result<Answer, ScriptError>>,
    /// 0 while queued; once a VM thread takes the call, that thread's generation plus one
    /// (see `Worker::replaced`).
    taken: Arc<AtomicU64>,
}

/// What a call asks of a VM: an RPC with its payload text, or a hook with its values.
pub(crate) enum Work {
    Rpc(String),
    Hook(HookArgs),
}

/// What a VM answered: an RPC's result text, or what a hook returned.
pub(crate) enum Answer {
    Rpc(String),
    Hook(Option<HookValue>),
}

impl Work {
    /// Starts the call on `vm`.
    pub(crate) fn start(
        self,
        vm: Rc<dyn EngineVm>,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        deadline: Instant,
    ) -> Started {
        match self {
            Work::Rpc(payload) => Started::Rpc(vm.call_rpc(RpcCall {
                id,
                ctx,
                payload,
                deadline,
            })),
            Work::Hook(args) => {
                let call = RpcCall {
                    id,
                    ctx,
                    payload: String::new(),
                    deadline,
                };
                Started::Hook(vm.call_hook(call, args))
            }
        }
    }
}

/// A call started on a VM (no second box around the engine's future).
pub(crate) enum Started {
    Rpc(LocalFuture<Result<String, ScriptError>>),
    Hook(LocalFuture<Result<Option<HookValue>, ScriptError>>),
}

impl Future for Started {
    type Output = Result<Answer, ScriptError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Started::Rpc(call) => call.as_mut().poll(cx).map(|r| r.map(Answer::Rpc)),
            Started::Hook(call) => call.as_mut().poll(cx).map(|r| r.map(Answer::Hook)),
        }
    }
}

impl Answer {
    /// An RPC's result (a hook's is never asked for as text).
    fn into_text(self) -> String {
        match self {
            Answer::Rpc(text) => text,
            Answer::Hook(value) => value
                .and_then(|v| v.into_json().ok())
                .map(|v| v.to_string())
                .unwrap_or_default(),
        }
    }

    /// A hook's result (an RPC's text read as JSON, `None` when empty or not JSON).
    fn into_value(self) -> Option<HookValue> {
        match self {
            Answer::Hook(value) => value,
            Answer::Rpc(text) => serde_json::from_str(&text).ok().map(HookValue::Json),
        }
    }
}

impl std::fmt::Debug for VmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmPool")
            .field("engine", &self.inner.engine)
            .field("vms", &self.inner.workers.len())
            .finish()
    }
}

impl VmPool {
    /// Starts the VM threads and waits until each has loaded the modules, then the watchdog.
    /// Any load error stops the already started threads and is returned.
    pub(crate) async fn start(
        factory: Arc<dyn EngineFactory>,
        setup: VmSetup,
        config: PoolConfig,
        watchdog_grace: Duration,
        inline: InlineConfig,
    ) -> Result<VmPool, LoadError> {
        let engine = factory.name();
        let vms = config.vms.max(1);
        let per_vm_queue = config.queue_capacity.div_ceil(vms).max(1);
        let (stop, _) = watch::channel(false);
        let workers = (0..vms)
            .map(|_| Worker {
                queue: Arc::new(JobQueue::new(per_vm_queue)),
                load: Arc::new(AtomicUsize::new(0)),
                current: parking_lot::Mutex::new(Arc::new(ThreadWatch::new())),
                replaced: watch::channel(0).0,
                finished: parking_lot::Mutex::new(None),
            })
            .collect();
        let inline = Arc::new(Inline::new(
            factory.clone(),
            setup.clone(),
            inline.max_vms,
            vms,
        ));
        let inner = Arc::new(PoolInner {
            engine,
            factory,
            setup,
            inline,
            max_calls: config.max_calls_per_vm.max(1),
            workers,
            stop,
            watchdog_grace,
        });
        let pool = VmPool {
            inner: inner.clone(),
            registrations: Registrations::default(),
        };
        let mut ready = Vec::with_capacity(vms);
        for index in 0..vms {
            match inner.spawn_thread(index) {
                Ok(rx) => ready.push(rx),
                Err(e) => {
                    pool.shutdown(Duration::from_secs(5)).await;
                    return Err(e);
                }
            }
        }
        let mut first: Option<Registrations> = None;
        for (index, ready) in ready.into_iter().enumerate() {
            let outcome = ready.await.unwrap_or_else(|_| {
                Err(LoadError::Engine {
                    engine,
                    message: format!("VM thread {index} stopped while loading modules"),
                })
            });
            let registrations = match outcome {
                Ok(registrations) => registrations,
                Err(e) => {
                    pool.shutdown(Duration::from_secs(5)).await;
                    return Err(e);
                }
            };
            match &first {
                None => first = Some(registrations),
                Some(expected) if ids(expected) != ids(&registrations) => {
                    pool.shutdown(Duration::from_secs(5)).await;
                    return Err(LoadError::Engine {
                        engine,
                        message: format!(
                            "VM {index} registered RPCs {:?} but VM 0 registered {:?}; register RPCs unconditionally at load time",
                            ids(&registrations),
                            ids(expected)
                        ),
                    });
                }
                Some(_) => {}
            }
        }
        if let Some(first) = &first {
            inner
                .inline
                .expect(ids(first).into_iter().map(str::to_owned).collect());
        }
        tokio::spawn(watchdog(Arc::downgrade(&inner)));
        Ok(VmPool {
            registrations: first.unwrap_or_default(),
            ..pool
        })
    }

    pub(crate) fn engine(&self) -> &'static str {
        self.inner.engine
    }

    pub(crate) fn registrations(&self) -> &Registrations {
        &self.registrations
    }

    /// Calls run on IO threads (`crate::inline`) since start, and that path's VMs alive now.
    pub(crate) fn inline_stats(&self) -> (u64, usize) {
        (self.inner.inline.calls(), self.inner.inline.vms())
    }

    /// Runs RPC `id` on this IO thread's VM if it can (`crate::inline`), otherwise on the
    /// least-loaded VM of the pool.
    pub(crate) async fn call(
        &self,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        payload: String,
    ) -> Result<Result<String, ScriptError>, DispatchError> {
        Ok(self
            .dispatch(id, ctx, Work::Rpc(payload), None)
            .await?
            .map(Answer::into_text))
    }

    /// Runs the hook stored under `id` with `args` ([`EngineVm::call_hook`]), where
    /// [`VmPool::call`] would run an RPC. `started`: when the host began the call (its
    /// metric's clock read); an inline call's time budget counts from it.
    pub(crate) async fn call_hook(
        &self,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        args: HookArgs,
        started: Instant,
    ) -> Result<Result<Option<HookValue>, ScriptError>, DispatchError> {
        Ok(self
            .dispatch(id, ctx, Work::Hook(args), Some(started))
            .await?
            .map(Answer::into_value))
    }

    /// `started`: when the caller began the call, if it read the clock; an inline call's
    /// budget counts from it (a queued call's from when its VM takes it).
    async fn dispatch(
        &self,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        payload: Work,
        started: Option<Instant>,
    ) -> Result<Result<Answer, ScriptError>, DispatchError> {
        // Synchronous: nothing of the thread's VM is held across an await.
        let (id, ctx, payload) = match self.inner.inline.try_call(id, ctx, payload, started) {
            Ok(result) => return Ok(result),
            Err(declined) => declined,
        };
        // Boxed: the queue path's state (job, reply channel, watch, select) is the largest
        // part of this future, and every caller's future (`RuntimeHooks`' boxed hook futures)
        // embeds it and is copied with it, though most calls end on the inline path above.
        Box::pin(self.queued(id, ctx, payload)).await
    }

    /// Runs a call the inline path declined on the least-loaded VM of the pool.
    async fn queued(
        &self,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        payload: Work,
    ) -> Result<Result<Answer, ScriptError>, DispatchError> {
        let engine = self.inner.engine;
        let workers = &self.inner.workers;
        let (reply, mut answer) = oneshot::channel();
        let taken = Arc::new(AtomicU64::new(0));
        let mut job = Job {
            id,
            ctx,
            payload,
            reply,
            taken: taken.clone(),
        };
        // Snapshot the loads first: they change while we sort, and a sort whose keys change
        // under it panics ("comparison function does not correctly implement a total order").
        let loads: Vec<usize> = workers
            .iter()
            .map(|w| w.load.load(Ordering::Relaxed))
            .collect();
        let mut order: Vec<usize> = (0..workers.len()).collect();
        order.sort_by_key(|&i| loads[i]);
        let mut stopped = true;
        for i in order {
            let worker = &workers[i];
            let mut replaced = worker.replaced.subscribe();
            worker.load.fetch_add(1, Ordering::Relaxed);
            match worker.queue.try_push(job) {
                Ok(()) => {
                    metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine)
                        .increment(1.0);
                    let result = loop {
                        tokio::select! {
                            biased;
                            result = &mut answer => break result.map_err(|_| DispatchError::Stopped),
                            changed = replaced.changed() => {
                                if changed.is_err() {
                                    break Err(DispatchError::Stopped);
                                }
                                // The VM was wedged and replaced: a call a replaced thread had
                                // taken is lost with it; one still queued, or taken by the
                                // replacement, is answered by the new VM.
                                let generation = *replaced.borrow_and_update();
                                let by = taken.load(Ordering::Acquire);
                                if by != 0 && by - 1 < generation {
                                    break Ok(Err(ScriptError::Timeout));
                                }
                            }
                        }
                    };
                    worker.load.fetch_sub(1, Ordering::Relaxed);
                    return result;
                }
                Err(PushError::Full(back)) => {
                    worker.load.fetch_sub(1, Ordering::Relaxed);
                    stopped = false;
                    job = back;
                }
                Err(PushError::Closed(back)) => {
                    worker.load.fetch_sub(1, Ordering::Relaxed);
                    job = back;
                }
            }
        }
        drop(job);
        Err(if stopped {
            DispatchError::Stopped
        } else {
            DispatchError::QueueFull
        })
    }

    /// Stops taking calls, lets the calls in flight finish (each within its budget), drops
    /// the VMs and waits up to `grace` for the threads. A wedged thread is not waited for.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        let _ = self.inner.stop.send(true);
        self.inner.inline.shutdown(grace).await;
        let finished: Vec<_> = self
            .inner
            .workers
            .iter()
            .filter_map(|w| w.finished.lock().take())
            .collect();
        let all = futures_util::future::join_all(finished);
        if tokio::time::timeout(grace, all).await.is_err() {
            tracing::warn!(
                engine = self.inner.engine,
                "script VMs still busy after the shutdown grace period"
            );
        }
    }
}

impl PoolInner {
    /// Starts the thread of VM slot `index`; resolves when its VM has loaded the modules.
    fn spawn_thread(
        &self,
        index: usize,
    ) -> Result<oneshot::Receiver<Result<Registrations, LoadError>>, LoadError> {
        let worker = &self.workers[index];
        let (ready_tx, ready_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let watch = worker.current.lock().clone();
        let generation = *worker.replaced.borrow();
        let thread = VmThread {
            factory: self.factory.clone(),
            setup: VmSetup {
                index,
                ..self.setup.clone()
            },
            max_calls: self.max_calls,
            queue: worker.queue.clone(),
            watch,
            generation,
            stop: self.stop.subscribe(),
            ready: ready_tx,
            done: done_tx,
        };
        let engine = self.engine;
        std::thread::Builder::new()
            .name(format!("metafi-{engine}-{index}"))
            .spawn(move || thread.run())
            .map_err(|e| LoadError::Engine {
                engine,
                message: format!("cannot start VM thread {index}: {e}"),
            })?;
        *worker.finished.lock() = Some(done_rx);
        Ok(ready_rx)
    }

    /// Gives up on the wedged thread of slot `index` and starts a new one on the same queue.
    fn replace(&self, index: usize) {
        let engine = self.engine;
        let worker = &self.workers[index];
        {
            let mut current = worker.current.lock();
            current.abandon();
            *current = Arc::new(ThreadWatch::new());
        }
        metrics::counter!("metafi_runtime_vms_wedged_total", "runtime" => engine).increment(1);
        tracing::error!(
            engine,
            vm = index,
            grace_ms = self.watchdog_grace.as_millis() as u64,
            "a script VM is still running a call past its deadline and cannot be interrupted; its calls fail with DEADLINE_EXCEEDED, its thread is abandoned and a new VM replaces it (runtime.watchdog_grace_ms)"
        );
        worker.replaced.send_modify(|generation| *generation += 1);
        match self.spawn_thread(index) {
            Ok(ready) => {
                let queue = worker.queue.clone();
                tokio::spawn(async move {
                    match ready.await {
                        Ok(Ok(_)) => {
                            tracing::info!(engine, vm = index, "replacement script VM ready");
                        }
                        outcome => {
                            let error = match outcome {
                                Ok(Err(e)) => e.to_string(),
                                _ => "the thread stopped".to_owned(),
                            };
                            tracing::error!(engine, vm = index, %error, "the replacement script VM failed to start; its slot refuses calls");
                            refuse_queued(engine, &queue);
                        }
                    }
                });
            }
            Err(e) => {
                tracing::error!(engine, vm = index, error = %e, "cannot start a replacement script VM; its slot refuses calls");
                refuse_queued(engine, &worker.queue);
            }
        }
    }
}

/// Closes a slot whose VM could not be replaced: its queued calls are refused (their callers
/// get "stopped") and new calls go to the other VMs.
fn refuse_queued(engine: &'static str, queue: &JobQueue<Job>) {
    let refused = queue.close().len();
    metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine).decrement(refused as f64);
}

/// Replaces VM threads that stay busy past a call's deadline plus the grace, until the pool
/// stops or is dropped.
async fn watchdog(pool: std::sync::Weak<PoolInner>) {
    let Some(inner) = pool.upgrade() else {
        return;
    };
    let mut stop = inner.stop.subscribe();
    let period =
        (inner.watchdog_grace / 4).clamp(Duration::from_millis(10), Duration::from_millis(250));
    drop(inner);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(period) => {}
        }
        // Held weakly between checks, so a pool dropped without `shutdown` still ends its
        // threads (they stop when the pool's stop sender goes away).
        let Some(inner) = pool.upgrade() else {
            return;
        };
        let now = Instant::now();
        for index in 0..inner.workers.len() {
            let overdue = inner.workers[index]
                .current
                .lock()
                .overdue(now, inner.watchdog_grace);
            if overdue {
                inner.replace(index);
            }
        }
        inner.inline.check_wedged(now, inner.watchdog_grace);
    }
}

fn ids(registrations: &Registrations) -> Vec<&str> {
    let mut ids: Vec<&str> = registrations.rpcs.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids
}

/// Everything one VM thread owns.
struct VmThread {
    factory: Arc<dyn EngineFactory>,
    setup: VmSetup,
    max_calls: usize,
    queue: Arc<JobQueue<Job>>,
    watch: Arc<ThreadWatch>,
    /// Which thread of its slot this is (0 for the first, then one more per replacement).
    generation: u64,
    stop: watch::Receiver<bool>,
    ready: oneshot::Sender<Result<Registrations, LoadError>>,
    done: oneshot::Sender<()>,
}

impl VmThread {
    fn run(self) {
        let engine = self.factory.name();
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                let _ = self.ready.send(Err(LoadError::Engine {
                    engine,
                    message: format!("cannot start the VM thread's event loop: {e}"),
                }));
                return;
            }
        };
        let local = tokio::task::LocalSet::new();
        let done = local.block_on(&runtime, self.serve());
        // The LocalSet (and with it every task holding the VM) is dropped before the thread
        // reports that it is done.
        drop(local);
        let _ = done.send(());
    }

    async fn serve(self) -> oneshot::Sender<()> {
        let VmThread {
            factory,
            setup,
            max_calls,
            queue,
            watch,
            generation,
            mut stop,
            ready,
            done,
        } = self;
        let engine = factory.name();
        let timeout = setup.limits.call_timeout;
        let vm = match factory.create_vm(setup).await {
            Ok(vm) => vm,
            Err(e) => {
                let _ = ready.send(Err(e));
                return done;
            }
        };
        if ready.send(Ok(vm.registrations())).is_err() {
            return done;
        }
        let slots = Arc::new(Semaphore::new(max_calls));
        loop {
            let job = tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => break,
                job = queue.pop() => match job {
                    Some(job) => job,
                    None => break,
                },
            };
            if watch.is_abandoned() {
                // This thread was given up for wedged and came back: its replacement serves
                // the queue now.
                if queue.push_front(job).is_err() {
                    // The slot was closed meanwhile: the job is dropped, so its caller is
                    // refused as every queued call of a closed slot is (`refuse_queued`).
                    metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine)
                        .decrement(1.0);
                }
                break;
            }
            // From here the call lives and dies with this thread: if it wedges, its caller is
            // answered by the pool.
            job.taken.store(generation + 1, Ordering::Release);
            let Ok(slot) = slots.clone().acquire_owned().await else {
                break;
            };
            metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine).decrement(1.0);
            if job.reply.is_closed() {
                // The caller went away (client disconnected) while the call was queued.
                continue;
            }
            let vm = vm.clone();
            let watch = watch.clone();
            tokio::task::spawn_local(async move {
                let deadline = Instant::now() + timeout;
                let call = job.payload.start(vm, job.id, job.ctx, deadline);
                let watched = Watched::new(call, watch, deadline);
                let result = tokio::time::timeout_at(deadline.into(), watched)
                    .await
                    .unwrap_or(Err(ScriptError::Timeout));
                let _ = job.reply.send(result);
                drop(slot);
            });
        }
        if !watch.is_abandoned() {
            // Refuse what is still queued, then let the calls in flight finish.
            for job in queue.close() {
                metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine).decrement(1.0);
                drop(job);
            }
        }
        let _ = slots.acquire_many(max_calls as u32).await;
        done
    }
}
