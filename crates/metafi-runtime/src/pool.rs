//! The VM pool of one engine: N OS threads, each owning one VM with every module loaded, a
//! current-thread tokio runtime and a `LocalSet`. Calls go to the least-loaded VM through a
//! bounded queue; on its VM a call runs as a local task, so calls awaiting `nk` IO interleave
//! while only one executes script code at a time. A VM that is busy with a long call delays
//! only the calls queued on it; the dispatcher sends new calls to the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use crate::context::CallContext;
use crate::error::{LoadError, ScriptError};
use crate::host::{EngineFactory, Registrations, RpcCall, VmSetup};

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

/// Why a call could not be handed to a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DispatchError {
    QueueFull,
    Stopped,
}

pub(crate) struct VmPool {
    engine: &'static str,
    workers: Vec<Worker>,
    registrations: Registrations,
    stop: watch::Sender<bool>,
    /// Resolved by each VM thread when it has finished its calls and dropped its VM.
    finished: parking_lot::Mutex<Vec<oneshot::Receiver<()>>>,
}

struct Worker {
    jobs: mpsc::Sender<Job>,
    /// Calls sent to this VM and not yet answered; the dispatcher picks the smallest.
    load: Arc<AtomicUsize>,
}

struct Job {
    id: Arc<str>,
    ctx: Arc<CallContext>,
    payload: String,
    reply: oneshot::Sender<Result<String, ScriptError>>,
}

impl std::fmt::Debug for VmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmPool")
            .field("engine", &self.engine)
            .field("vms", &self.workers.len())
            .finish()
    }
}

impl VmPool {
    /// Starts the VM threads and waits until each has loaded the modules. Any load error
    /// stops the already started threads and is returned.
    pub(crate) async fn start(
        factory: Arc<dyn EngineFactory>,
        setup: VmSetup,
        config: PoolConfig,
    ) -> Result<VmPool, LoadError> {
        let engine = factory.name();
        let vms = config.vms.max(1);
        let per_vm_queue = config.queue_capacity.div_ceil(vms).max(1);
        let (stop, stop_rx) = watch::channel(false);
        let mut workers = Vec::with_capacity(vms);
        let mut ready = Vec::with_capacity(vms);
        let mut finished = Vec::with_capacity(vms);
        for index in 0..vms {
            let (jobs, jobs_rx) = mpsc::channel(per_vm_queue);
            let (ready_tx, ready_rx) = oneshot::channel();
            let (done_tx, done_rx) = oneshot::channel();
            let thread = VmThread {
                factory: factory.clone(),
                setup: VmSetup {
                    index,
                    ..setup.clone()
                },
                max_calls: config.max_calls_per_vm.max(1),
                jobs: jobs_rx,
                stop: stop_rx.clone(),
                ready: ready_tx,
                done: done_tx,
            };
            std::thread::Builder::new()
                .name(format!("metafi-{engine}-{index}"))
                .spawn(move || thread.run())
                .map_err(|e| LoadError::Engine {
                    engine,
                    message: format!("cannot start VM thread {index}: {e}"),
                })?;
            workers.push(Worker {
                jobs,
                load: Arc::new(AtomicUsize::new(0)),
            });
            ready.push(ready_rx);
            finished.push(done_rx);
        }
        let pool = VmPool {
            engine,
            workers,
            registrations: Registrations::default(),
            stop,
            finished: parking_lot::Mutex::new(finished),
        };
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
        Ok(VmPool {
            registrations: first.unwrap_or_default(),
            ..pool
        })
    }

    pub(crate) fn engine(&self) -> &'static str {
        self.engine
    }

    pub(crate) fn registrations(&self) -> &Registrations {
        &self.registrations
    }

    /// Runs RPC `id` on the least-loaded VM.
    pub(crate) async fn call(
        &self,
        id: Arc<str>,
        ctx: Arc<CallContext>,
        payload: String,
    ) -> Result<Result<String, ScriptError>, DispatchError> {
        let (reply, answer) = oneshot::channel();
        let mut job = Job {
            id,
            ctx,
            payload,
            reply,
        };
        // Snapshot the loads first: they change while we sort, and a sort whose keys change
        // under it panics ("comparison function does not correctly implement a total order").
        let loads: Vec<usize> = self
            .workers
            .iter()
            .map(|w| w.load.load(Ordering::Relaxed))
            .collect();
        let mut order: Vec<usize> = (0..self.workers.len()).collect();
        order.sort_by_key(|&i| loads[i]);
        let mut stopped = true;
        for i in order {
            let worker = &self.workers[i];
            worker.load.fetch_add(1, Ordering::Relaxed);
            match worker.jobs.try_send(job) {
                Ok(()) => {
                    metrics::gauge!("metafi_runtime_queue_depth", "runtime" => self.engine)
                        .increment(1.0);
                    let result = answer.await.map_err(|_| DispatchError::Stopped);
                    worker.load.fetch_sub(1, Ordering::Relaxed);
                    return result;
                }
                Err(mpsc::error::TrySendError::Full(back)) => {
                    worker.load.fetch_sub(1, Ordering::Relaxed);
                    stopped = false;
                    job = back;
                }
                Err(mpsc::error::TrySendError::Closed(back)) => {
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
    /// the VMs and waits up to `grace` for the threads.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        let _ = self.stop.send(true);
        let finished = std::mem::take(&mut *self.finished.lock());
        let all = futures_util::future::join_all(finished);
        if tokio::time::timeout(grace, all).await.is_err() {
            tracing::warn!(
                engine = self.engine,
                "script VMs still busy after the shutdown grace period"
            );
        }
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
    jobs: mpsc::Receiver<Job>,
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
            mut jobs,
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
                job = jobs.recv() => match job {
                    Some(job) => job,
                    None => break,
                },
            };
            let Ok(slot) = slots.clone().acquire_owned().await else {
                break;
            };
            metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine).decrement(1.0);
            if job.reply.is_closed() {
                // The caller went away (client disconnected) while the call was queued.
                continue;
            }
            let vm = vm.clone();
            tokio::task::spawn_local(async move {
                let deadline = Instant::now() + timeout;
                let call = RpcCall {
                    id: job.id,
                    ctx: job.ctx,
                    payload: job.payload,
                    deadline,
                };
                let result = tokio::time::timeout_at(deadline.into(), vm.call_rpc(call))
                    .await
                    .unwrap_or(Err(ScriptError::Timeout));
                let _ = job.reply.send(result);
                drop(slot);
            });
        }
        // Refuse what is still queued, then let the calls in flight finish.
        jobs.close();
        while let Ok(job) = jobs.try_recv() {
            metrics::gauge!("metafi_runtime_queue_depth", "runtime" => engine).decrement(1.0);
            drop(job);
        }
        let _ = slots.acquire_many(max_calls as u32).await;
        done
    }
}
