//! Storage indexes on a real node: Lua and JavaScript modules register an index and a filter;
//! objects written and deleted over REST show up in (and leave) `storage_index_list`, and the
//! indexes are rebuilt from storage when the node restarts. On SQLite, and on PostgreSQL when
//! `METAFI_TEST_POSTGRES_URL` is set.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use metafi_testkit::{Http, TestNode};
use serde_json::{Value, json};

/// The Lua module over `collection`: index `levels` (level sortable), a filter that keeps out
/// objects whose mode is "banned", and an RPC that lists with the query it is given.
fn lua(collection: &str) -> String {
    format!(
        r#"
local nk = require("nakama")
nk.register_storage_index("levels", "{collection}", "", {{"level", "mode"}}, {{"level"}}, 1000, false)
nk.register_storage_index_filter("levels", function(context, write)
  return write.value.mode ~= "banned" and context.execution_mode == "storage_index_filter"
end)
nk.register_rpc(function(context, payload)
  local q = nk.json_decode(payload)
  local objects, cursor = nk.storage_index_list("levels", q.query, q.limit, q.order or {{}}, q.caller, q.cursor)
  local keys = {{}}
  for i, o in ipairs(objects) do keys[i] = o.key end
  return nk.json_encode({{ keys = keys, cursor = cursor, first = objects[1] }})
end, "lua_list")
"#
    )
}

/// The same in JavaScript over its own index (`levels_js`, index-only).
fn js(collection: &str) -> String {
    format!(
        r#"
function InitModule(ctx, logger, nk, initializer) {{
  initializer.registerStorageIndex("levels_js", "{collection}", null, ["level", "mode"], ["level"], 1000, true);
  initializer.registerStorageIndexFilter("levels_js", function (ctx, logger, nk, write) {{
    return write.value.mode !== "banned" && ctx.executionMode === "storage_index_filter";
  }});
  initializer.registerRpc("js_list", function (ctx, logger, nk, payload) {{
    var q = JSON.parse(payload);
    var page = nk.storageIndexList("levels_js", q.query, q.limit, q.order, q.caller, q.cursor);
    return JSON.stringify({{ keys: page.objects.map(function (o) {{ return o.key; }}), cursor: page.cursor, first: page.objects[0] || null }});
  }});
}}
"#
    )
}

async fn node(dir: &Path, collection: &str, postgres: bool) -> Option<TestNode> {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("index.lua"), lua(collection)).unwrap();
    std::fs::write(modules.join("index.js"), js(collection)).unwrap();
    let path = modules.display().to_string();
    if postgres {
        TestNode::start_on_postgres(dir, move |raw| raw.runtime.path = path).await
    } else {
        Some(TestNode::start_in(dir, move |raw| raw.runtime.path = path).await)
    }
}

async fn list(http: &Http, token: &str, rpc: &str, query: Value) -> Value {
    let reply = http
        .send(
            http.post(&format!("/v2/rpc/{rpc}"))
                .bearer_auth(token)
                .json(&query.to_string()),
        )
        .await;
    assert_eq!(reply.status, 200, "{rpc} {query}: {}", reply.body);
    serde_json::from_str(reply.body["payload"].as_str().unwrap()).unwrap()
}

fn keys(page: &Value) -> Vec<String> {
    page["keys"]
        .as_array()
        .map(|keys| {
            keys.iter()
                .map(|k| k.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn write(http: &Http, token: &str, collection: &str, objects: &[(&str, Value)]) {
    let objects: Vec<Value> = objects
        .iter()
        .map(|(key, value)| {
            json!({"collection": collection, "key": key, "value": value.to_string(), "permission_read": 2})
        })
        .collect();
    let reply = http
        .send(
            http.put("/v2/storage")
                .bearer_auth(token)
                .json(&json!({ "objects": objects })),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

async fn writes_deletes_and_restarts(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    // A collection of this run's own: a PostgreSQL database outlives test runs.
    let collection = format!("levels_{}", uuid::Uuid::new_v4().simple());
    let Some(s) = node(dir.path(), &collection, postgres).await else {
        return;
    };
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    write(
        &http,
        &token,
        &collection,
        &[
            ("a", json!({"level": 5, "mode": "ffa"})),
            ("b", json!({"level": 1, "mode": "tdm"})),
            ("c", json!({"level": 9, "mode": "banned"})),
            ("d", json!({"level": 7, "mode": "ffa", "secret": "s"})),
        ],
    )
    .await;
    for rpc in ["lua_list", "js_list"] {
        let page = list(
            &http,
            &token,
            rpc,
            json!({"query": "+value.level:>=3", "limit": 10, "order": ["-value.level"]}),
        )
        .await;
        assert_eq!(
            keys(&page),
            ["d", "a"],
            "{rpc}: sorted, the filter kept c out"
        );
        let page = list(
            &http,
            &token,
            rpc,
            json!({"query": "+value.mode:ffa", "limit": 1, "order": ["value.level"]}),
        )
        .await;
        assert_eq!(keys(&page), ["a"], "{rpc}");
        let cursor = page["cursor"].as_str().expect("a next page").to_owned();
        let next = list(&http, &token, rpc, json!({"query": "+value.mode:ffa", "limit": 1, "order": ["value.level"], "cursor": cursor})).await;
        assert_eq!(keys(&next), ["d"], "{rpc}");
        assert!(next["cursor"].is_null(), "{rpc}: last page");
    }
    // Index-only (JS): the value holds the indexed keys only; read from storage (Lua): all.
    let lua_page = list(
        &http,
        &token,
        "lua_list",
        json!({"query": "+key:d", "limit": 10}),
    )
    .await;
    assert_eq!(lua_page["first"]["value"]["secret"], "s");
    assert_eq!(
        lua_page["first"]["user_id"].as_str().map(str::len),
        Some(36)
    );
    let js_page = list(
        &http,
        &token,
        "js_list",
        json!({"query": "+key:d", "limit": 10}),
    )
    .await;
    assert!(
        js_page["first"]["value"].get("secret").is_none(),
        "{js_page}"
    );
    assert_eq!(js_page["first"]["value"]["level"], 7);
    assert!(js_page["first"]["userId"].is_string(), "{js_page}");

    // A REST delete leaves the index.
    let reply = http
        .send(
            http.put("/v2/storage/delete")
                .bearer_auth(&token)
                .json(&json!({"object_ids": [{"collection": collection, "key": "a"}]})),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    for rpc in ["lua_list", "js_list"] {
        let page = list(
            &http,
            &token,
            rpc,
            json!({"query": "*", "limit": 10, "order": ["value.level"]}),
        )
        .await;
        assert_eq!(keys(&page), ["b", "d"], "{rpc}");
    }
    // A bad query is an error, not an empty page.
    let reply = http
        .send(
            http.post("/v2/rpc/lua_list")
                .bearer_auth(&token)
                .json(&json!({"query": "(value.level:1)", "limit": 10}).to_string()),
        )
        .await;
    assert_ne!(reply.status, 200, "{}", reply.body);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("error in storage index list: invalid query"),
        "{}",
        reply.body
    );

    // After a restart the indexes are filled from storage (the filter runs again).
    let mut s = s;
    s.shutdown().await.unwrap();
    let s = node(dir.path(), &collection, postgres).await.unwrap();
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    for rpc in ["lua_list", "js_list"] {
        let page = list(
            &http,
            &token,
            rpc,
            json!({"query": "*", "limit": 10, "order": ["value.level"]}),
        )
        .await;
        assert_eq!(keys(&page), ["b", "d"], "{rpc} after a restart");
    }
    s.stop().await;
}

#[tokio::test]
async fn rest_writes_and_deletes_reach_the_index_and_a_restart_rebuilds_it_sqlite() {
    writes_deletes_and_restarts(false).await;
}

#[tokio::test]
async fn rest_writes_and_deletes_reach_the_index_and_a_restart_rebuilds_it_postgres() {
    writes_deletes_and_restarts(true).await;
}
