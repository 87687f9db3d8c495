//! The kit's own contract: a node it starts serves sign-in and the socket, and one it stops
//! is gone, with its data kept for the next start.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_proto::realtime::{Message, Ping};
use metafi_testkit::{Socket, TestNode, user};

/// Signs in `device` and returns whether the account was created.
async fn sign_in(node: &TestNode, device: &str) -> bool {
    let reply = node.http().auth_device(device, true).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    // Nakama leaves `created` out when it is false.
    reply.body["created"] == true
}

/// Starts a node in `dir` (SQLite, or PostgreSQL when asked and available), creates an account,
/// stops the node, checks its port is closed, restarts and finds the account.
async fn accounts_survive_a_stop_and_restart(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let start = || async {
        if postgres {
            TestNode::start_on_postgres(dir.path(), |_| {}).await
        } else {
            Some(TestNode::start_in(dir.path(), |_| {}).await)
        }
    };
    let Some(node) = start().await else {
        return; // METAFI_TEST_POSTGRES_URL is not set: nothing to test against.
    };
    let device = format!("kit-{}", uuid::Uuid::new_v4());
    assert!(
        sign_in(&node, &device).await,
        "a new device creates an account"
    );
    let fixture = user(&node.http()).await;
    let mut socket = Socket::connect(&node.base, &fixture.token, "").await;
    let pong = socket.request(Message::Ping(Ping {})).await;
    assert!(matches!(pong.message, Some(Message::Pong(_))), "{pong:?}");

    let address = node.base.trim_start_matches("http://").to_owned();
    node.stop().await;
    assert!(
        tokio::net::TcpStream::connect(&address).await.is_err(),
        "a stopped node no longer accepts connections on {address}"
    );

    let node = start().await.unwrap();
    assert!(
        !sign_in(&node, &device).await,
        "the account made before the stop is found after the restart"
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_sqlite_node_closes_its_port_and_keeps_its_accounts() {
    accounts_survive_a_stop_and_restart(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_postgres_node_closes_its_port_and_keeps_its_accounts() {
    accounts_survive_a_stop_and_restart(true).await;
}
