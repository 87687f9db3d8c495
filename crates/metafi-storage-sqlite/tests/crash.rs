//! Acknowledged writes survive `kill -9`.
//!
//! The test re-executes its own binary as a child (selected by an environment variable) that
//! creates users as fast as it can and prints each id after its write was acknowledged. The
//! parent SIGKILLs the child mid-stream, reopens the database and checks that every id the
//! child printed is there.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_storage::{AccountStore as _, NewIdentity, NewUser, Storage as _};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

const CHILD_DB: &str = "METAFI_CRASH_CHILD_DB";
const ACKS_BEFORE_KILL: usize = 3000;

fn config(path: &str) -> SqliteConfig {
    SqliteConfig {
        path: path.into(),
        readers: 1,
        ..SqliteConfig::default()
    }
}

/// The child: started by the parent test below (`--ignored --exact crash_child`), never on its own.
#[test]
#[ignore = "child process of acknowledged_writes_survive_sigkill, which runs it"]
fn crash_child() {
    let path = std::env::var(CHILD_DB).unwrap_or_else(|_| {
        panic!("crash_child is started by acknowledged_writes_survive_sigkill with {CHILD_DB} set; run that test instead")
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let store = Arc::new(SqliteStorage::open(config(&path)).expect("open"));
        let deadline = Instant::now() + Duration::from_secs(60);
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    // Bounded: the parent kills us long before this ends.
                    while Instant::now() < deadline {
                        let id = Uuid::new_v4();
                        let new = NewUser {
                            id,
                            username: id.simple().to_string(),
                            identity: NewIdentity::Device { id: id.to_string() },
                            now_ms: 0,
                        };
                        store.create_user(new).await.expect("create");
                        println!("ACK {id}");
                    }
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    });
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("crash.db");
    let path = path.to_str().expect("utf-8 temp path").to_owned();
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut acked = Vec::new();
    let mut killed = false;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child output");
        if let Some(id) = line.strip_prefix("ACK ") {
            acked.push(Uuid::parse_str(id).expect("an id"));
        }
        if !killed && acked.len() >= ACKS_BEFORE_KILL {
            // SIGKILL: no destructor, no final commit, no checkpoint.
            child.kill().expect("kill child");
            killed = true;
        }
    }
    let status = child.wait().expect("wait child");
    assert!(killed, "the child ended before being killed: {status:?}");
    assert!(acked.len() >= ACKS_BEFORE_KILL);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = SqliteStorage::open(config(&path)).expect("reopen after crash");
        let mut found = 0;
        for chunk in acked.chunks(500) {
            found += store.users_by_id(chunk).await.expect("read").len();
        }
        assert_eq!(
            found,
            acked.len(),
            "every acknowledged write survived kill -9"
        );
        store.close().await;
    });
}
