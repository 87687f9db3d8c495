//! A throughput bench every backend runs the same way (`cargo bench -p <backend>`).
//!
//! It drives the storage calls of the server's two hottest requests: device registration
//! (`find_user` miss, then `create_user`) and device authentication (`find_user` hit).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::NOW;
use crate::{IdentityRef, NewIdentity, NewUser, Storage};

/// How hard to push.
#[derive(Debug, Clone, Copy)]
pub struct BenchOptions {
    /// Concurrent tasks issuing requests.
    pub concurrency: usize,
    /// Operations per phase.
    pub operations: usize,
}

/// Operations per second of each phase.
#[derive(Debug, Clone, Copy)]
pub struct BenchReport {
    pub create_user: f64,
    pub register: f64,
    pub find_user_hit: f64,
    pub writes: u64,
    pub commits: u64,
}

/// Runs the three phases against an empty store and returns their rates.
pub async fn run(store: Arc<dyn Storage>, options: BenchOptions) -> BenchReport {
    let prefix = Uuid::new_v4().simple().to_string();
    let before = store.stats();
    let create_user = phase(&store, options, {
        let prefix = prefix.clone();
        move |store, n| {
            let prefix = prefix.clone();
            async move {
                let new = user(&format!("c{prefix}{n}"), &format!("c-{prefix}-{n}"));
                store.create_user(new).await.expect("create_user");
            }
        }
    })
    .await;
    let register = phase(&store, options, {
        let prefix = prefix.clone();
        move |store, n| {
            let prefix = prefix.clone();
            async move {
                let device = format!("r-{prefix}-{n}");
                let found = store.find_user(IdentityRef::Device(&device)).await;
                assert!(found.expect("find_user").is_none());
                let new = user(&format!("r{prefix}{n}"), &device);
                store.create_user(new).await.expect("create_user");
            }
        }
    })
    .await;
    let after = store.stats();
    let registered = options.operations;
    let find_user_hit = phase(&store, options, move |store, n| {
        let prefix = prefix.clone();
        async move {
            // A stride that visits registered devices in a scattered order.
            let device = format!("r-{prefix}-{}", n.wrapping_mul(7919) % registered);
            let found = store.find_user(IdentityRef::Device(&device)).await;
            assert!(found.expect("find_user").is_some());
        }
    })
    .await;
    BenchReport {
        create_user,
        register,
        find_user_hit,
        writes: after.writes - before.writes,
        commits: after.commits - before.commits,
    }
}

fn user(username: &str, device: &str) -> NewUser {
    NewUser {
        id: Uuid::new_v4(),
        username: username.to_owned(),
        identity: NewIdentity::Device {
            id: device.to_owned(),
        },
        now_ms: NOW,
    }
}

async fn phase<F, Fut>(store: &Arc<dyn Storage>, options: BenchOptions, op: F) -> f64
where
    F: Fn(Arc<dyn Storage>, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(options.concurrency);
    for _ in 0..options.concurrency {
        let (store, next, op) = (Arc::clone(store), Arc::clone(&next), op.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= options.operations {
                    break;
                }
                op(Arc::clone(&store), n).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("bench task");
    }
    rate(options.operations, started.elapsed())
}

fn rate(operations: usize, elapsed: Duration) -> f64 {
    operations as f64 / elapsed.as_secs_f64().max(f64::EPSILON)
}
