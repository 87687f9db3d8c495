//! Every player seated at a rush (`docs/MATCHES.md`, "Seats"), over real sockets in every
//! runtime: 200 players call the seed's match finder (`get_match` in Lua, `get_match_js`,
//! `get_match_native`: "a match with fewer than 10 players, else a new one", with the engine's
//! `match_find_seat`), and only once every finder has answered do they all join at once — the
//! widest window between finding and joining there is. Every join is accepted and no match
//! holds more than 10. No timing assertions: the order is forced, not hoped for.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::path::Path;

use metafi_proto::api::Rpc;
use metafi_proto::realtime::{Envelope, MatchJoin, MatchJoinId, Message};
use metafi_testkit::{Http, Socket, TestNode, user};

const PLAYERS: usize = 200;

async fn server(dir: &Path) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for file in ["lua/match.lua", "lua/match_rpc.lua", "js/match.js"] {
        let name = Path::new(file).file_name().unwrap();
        std::fs::copy(examples.join(file), modules.join(name)).unwrap();
    }
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.runtime.lua_vms = 2;
        raw.matches.executor_threads = 2;
        // Far longer than a slow machine takes between a find and its join.
        raw.matches.seat_reservation_ms = 120_000;
    })
    .await
}

fn match_id(answer: &Envelope) -> String {
    match &answer.message {
        Some(Message::Rpc(rpc)) => {
            let value: serde_json::Value = serde_json::from_str(&rpc.payload).unwrap();
            value["match_id"].as_str().unwrap().to_owned()
        }
        other => panic!("the finder failed: {other:?}"),
    }
}

/// All players find a match, then all join; returns players per match.
async fn rush(sockets: Vec<Socket>, finder: &str) -> (Vec<Socket>, HashMap<String, usize>) {
    let finds = sockets.into_iter().map(|mut socket| {
        let finder = finder.to_owned();
        tokio::spawn(async move {
            let answer = socket
                .request(Message::Rpc(Rpc {
                    id: finder,
                    payload: "{}".into(),
                    http_key: String::new(),
                }))
                .await;
            (match_id(&answer), socket)
        })
    });
    let mut found = Vec::new();
    for find in finds {
        found.push(find.await.unwrap());
    }
    let joins = found.into_iter().map(|(id, mut socket)| {
        tokio::spawn(async move {
            let answer = socket
                .request(Message::MatchJoin(MatchJoin {
                    id: Some(MatchJoinId::MatchId(id.clone())),
                    metadata: HashMap::new(),
                }))
                .await;
            (id, answer, socket)
        })
    });
    let mut per_match: HashMap<String, usize> = HashMap::new();
    let mut sockets = Vec::new();
    for join in joins {
        let (id, answer, socket) = join.await.unwrap();
        match answer.message {
            Some(Message::Match(m)) => assert_eq!(m.match_id, id),
            other => panic!("{finder}: a player was not seated in {id}: {other:?}"),
        }
        *per_match.entry(id).or_default() += 1;
        sockets.push(socket);
    }
    (sockets, per_match)
}

#[tokio::test]
async fn every_player_of_a_rush_is_seated_in_lua_js_and_native() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let mut sockets = Vec::new();
    for _ in 0..PLAYERS {
        let who = user(&http).await;
        sockets.push(Socket::connect(&s.base, &who.token, "").await);
    }
    for finder in ["get_match", "get_match_js", "get_match_native"] {
        let (back, per_match) = rush(sockets, finder).await;
        sockets = back;
        let seated: usize = per_match.values().sum();
        assert_eq!(seated, PLAYERS, "{finder}");
        for (id, players) in &per_match {
            assert!(*players <= 10, "{finder}: {players} players in {id}");
        }
        // The finder fills matches one after another: 200 players, 20 full matches.
        assert_eq!(per_match.len(), PLAYERS / 10, "{finder}: {per_match:?}");
    }
    s.stop().await;
}
