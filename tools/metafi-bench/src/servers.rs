//! Several servers under one run (the nodes of a cluster, or one server): simulated users are
//! spread over them round-robin by user number, and what each user records is tallied for its
//! server too, so the report shows how the load fell on each node.
//!
//! The runner runs every user inside [`Servers::run_user`], which sets the user's server as a
//! task-local value: the workload asks [`crate::workloads::Ctx::client`] for "my server's
//! client", and [`crate::stats::Stats`] reads the same value to tally successes and errors per
//! server — no workload passes a server index around.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use metafi_client::Client;
use serde::Serialize;

tokio::task_local! {
    /// The server of the simulated user running in this task.
    static SERVER: usize;
}

/// The servers of a run and a client of each (sharing one set of network counters).
#[derive(Debug)]
pub struct Servers {
    urls: Vec<String>,
    clients: Vec<Client>,
}

/// What one server got over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServerCount {
    /// `http://host:port` as given on the command line.
    pub server: String,
    /// Simulated users started on it.
    pub users: u64,
    /// Successes its users recorded (every series).
    pub successes: u64,
    /// Errors its users recorded.
    pub errors: u64,
}

/// Live per-server counters, kept by [`crate::stats::Stats`].
#[derive(Debug, Default)]
pub struct Tally {
    users: AtomicU64,
    successes: AtomicU64,
    errors: AtomicU64,
}

impl Servers {
    /// `urls[i]` is reached through `clients[i]`; at least one.
    pub fn new(urls: Vec<String>, clients: Vec<Client>) -> anyhow::Result<Servers> {
        anyhow::ensure!(!clients.is_empty(), "no server to measure (--server)");
        anyhow::ensure!(urls.len() == clients.len(), "one client per server");
        Ok(Servers { urls, clients })
    }

    pub fn len(&self) -> usize {
        self.clients.len()
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The server of user number `index`: round-robin.
    pub fn of_user(&self, index: u64) -> usize {
        (index % self.clients.len() as u64) as usize
    }

    /// The client of server `server` (wrapping past the last).
    pub fn client(&self, server: usize) -> &Client {
        &self.clients[server % self.clients.len()]
    }

    /// The client of the server of the user running in this task (the first server outside a
    /// user: setup and probes).
    pub fn current(&self) -> &Client {
        self.client(current().unwrap_or(0))
    }

    /// Runs `user` as a user of server `server`.
    pub fn run_user<F: Future>(server: usize, user: F) -> impl Future<Output = F::Output> {
        SERVER.scope(server, user)
    }
}

/// The server of the user running in this task, if any.
pub fn current() -> Option<usize> {
    SERVER.try_with(|s| *s).ok()
}

impl Tally {
    pub fn tallies(count: usize) -> Vec<Tally> {
        (0..count.max(1)).map(|_| Tally::default()).collect()
    }

    pub fn user(&self) {
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    pub fn success(&self) {
        self.successes.fetch_add(1, Ordering::Relaxed);
    }

    pub fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far, for server `server`.
    pub fn count(&self, server: &str) -> ServerCount {
        ServerCount {
            server: server.to_owned(),
            users: self.users.load(Ordering::Relaxed),
            successes: self.successes.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn users_are_spread_round_robin_and_know_their_server_inside_their_task() {
        assert_eq!(current(), None, "outside a user there is no server");
        let inside = Servers::run_user(2, async { current() }).await;
        assert_eq!(inside, Some(2));
        // A task spawned by the user does not inherit it (the workloads record in the user's
        // own task).
        let spawned = Servers::run_user(1, async { tokio::spawn(async { current() }).await })
            .await
            .unwrap();
        assert_eq!(spawned, None);
    }

    #[test]
    fn tallies_count_per_server() {
        let tallies = Tally::tallies(2);
        tallies[0].user();
        tallies[0].success();
        tallies[0].success();
        tallies[1].error();
        assert_eq!(
            tallies[0].count("a"),
            ServerCount {
                server: "a".into(),
                users: 1,
                successes: 2,
                errors: 0
            }
        );
        assert_eq!(tallies[1].count("b").errors, 1);
        assert_eq!(Tally::tallies(0).len(), 1, "at least one");
    }
}
