//! Opening pool connections on the backend's home runtime.
//!
//! A `tokio_postgres` connection is a socket registered with the reactor of the runtime that
//! created it, driven by a task spawned on that runtime. deadpool opens connections lazily, on
//! whatever runtime happens to ask for one — which may be a script VM's single-threaded runtime
//! (Lua, JS). A connection born there is only driven while that VM is idle, so every other user
//! of the pooled connection would stall behind a busy script. Opening each connection on the
//! runtime the storage was opened on (the server's IO runtime) keeps them independent of who
//! borrows them.

use deadpool_postgres::Connect;
use futures_util::future::BoxFuture;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Config, Error, NoTls};

/// A deadpool connector that connects and drives connections on `home`.
#[derive(Debug, Clone)]
pub(crate) struct HomeRuntimeConnect {
    pub(crate) home: Handle,
}

impl Connect for HomeRuntimeConnect {
    fn connect(
        &self,
        pg_config: &Config,
    ) -> BoxFuture<'_, Result<(Client, JoinHandle<()>), Error>> {
        let config = pg_config.clone();
        let home = self.home.clone();
        Box::pin(async move {
            let connecting = home.spawn(async move {
                let (client, connection) = config.connect(NoTls).await?;
                let driver = tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::warn!(backend = "postgres", error = %e, "connection closed with an error");
                    }
                });
                Ok::<_, Error>((client, driver))
            });
            match connecting.await {
                Ok(result) => result,
                // The home runtime is shutting down (or the task panicked): report it as a
                // connection failure; tokio-postgres offers no public constructor for a
                // "runtime gone" error, and its timeout error is the closest in meaning.
                Err(_) => Err(Error::__private_api_timeout()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A connection requested from a busy single-threaded runtime (a script VM in a long loop)
    /// must still answer queries issued elsewhere.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connection_from_a_busy_foreign_runtime_is_driven_at_home() {
        let Ok(url) = std::env::var("METAFI_TEST_POSTGRES_URL") else {
            assert!(
                std::env::var("METAFI_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "METAFI_REQUIRE_POSTGRES=1 but METAFI_TEST_POSTGRES_URL is unset"
            );
            eprintln!("skipped: set METAFI_TEST_POSTGRES_URL");
            return;
        };
        let config: Config = url.parse().expect("a PostgreSQL URL");
        let connector = HomeRuntimeConnect {
            home: Handle::current(),
        };
        let (sender, receiver) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let vm_thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let connected = runtime.block_on(connector.connect(&config));
            sender
                .send(connected.map(|(client, _driver)| client))
                .expect("send");
            // Busy without ever yielding to this runtime again, until the query was answered.
            let _ = released.recv();
        });
        let client = tokio::task::spawn_blocking(move || receiver.recv().expect("receive"))
            .await
            .expect("join")
            .expect("connect");
        // The busy thread is released only after the answer: a connection driven by its
        // runtime would never answer (the timeout is a hang guard, not a speed bound).
        let row = tokio::time::timeout(
            Duration::from_secs(60),
            client.query_one("SELECT 41 + 1", &[]),
        )
        .await
        .expect("the query must not wait for the busy thread")
        .expect("query");
        assert_eq!(row.get::<_, i32>(0), 42);
        let _ = release.send(());
        tokio::task::spawn_blocking(move || vm_thread.join().expect("thread"))
            .await
            .expect("join");
    }
}
