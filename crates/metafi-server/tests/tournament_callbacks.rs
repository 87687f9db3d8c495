//! Tournament end and reset callbacks on a real node: a module creates a tournament that
//! starts every second and is active for one second, and registers end and reset functions; the scheduler calls them with the tournament (as each
//! runtime shows it), its end and its next reset, and the functions' storage writes are read
//! back over REST.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::time::Duration;

use metafi_testkit::{Http, TestNode};

const LUA: &str = r#"
local nk = require("nakama")
nk.tournament_create("every_second", false, "asc", "set", 1, "* * * * * * *", { m = 1 }, "T")
local function record(key)
  return function(context, tournament, ending, reset)
    nk.storage_write({ { collection = "tournament", key = key, value = {
      id = tournament.id, sort_order = tournament.sort_order, operator = tournament.operator,
      title = tournament.title, m = tournament.metadata.m, mode = context.execution_mode,
      numbers = type(ending) == "number" and type(reset) == "number",
      end_is_end_active = ending == tournament.end_active
    }, permission_read = 2, permission_write = 0 } })
  end
end
nk.register_tournament_end(record("lua_end"))
nk.register_tournament_reset(record("lua_reset"))
"#;

const JS: &str = r#"
function record(key) {
  return function (ctx, logger, nk, tournament, end, reset) {
    nk.storageWrite([{ collection: "tournament", key: key, value: {
      id: tournament.id, sort_order: tournament.sortOrder, operator: tournament.operator,
      title: tournament.title, m: tournament.metadata.m, mode: ctx.executionMode,
      numbers: typeof end === "number" && typeof reset === "number",
      end_is_end_active: end === tournament.endActive
    }, permissionRead: 2, permissionWrite: 0 }]);
  };
}
function InitModule(ctx, logger, nk, initializer) {
  nk.tournamentCreate("every_second", false, "asc", "set", 1, "* * * * * * *", { m: 1 }, "T");
  initializer.registerTournamentEnd(record("js_end"));
  initializer.registerTournamentReset(record("js_reset"));
}
"#;

async fn server(dir: &Path, runtime: &str) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    match runtime {
        "lua" => std::fs::write(modules.join("tournament.lua"), LUA).unwrap(),
        _ => std::fs::write(modules.join("tournament.js"), JS).unwrap(),
    }
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
    })
    .await
}

#[tokio::test]
async fn the_end_and_reset_functions_run() {
    for runtime in ["lua", "js"] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(dir.path(), runtime).await;
        let http = Http::new(&s.base);
        let (token, _) = http.new_session().await;
        for event in ["end", "reset"] {
            let key = format!("{runtime}_{event}");
            let mut value = None;
            // Events come every second; wait for the first call (not a timing assertion: up
            // to 20 s on a loaded machine).
            for _ in 0..200 {
                let read = http
                    .send(http.post("/v2/storage").bearer_auth(&token).json(
                        &serde_json::json!({ "object_ids": [{ "collection": "tournament", "key": key }] }),
                    ))
                    .await;
                if let Some(text) = read.body["objects"][0]["value"].as_str() {
                    value = Some(serde_json::from_str::<serde_json::Value>(text).unwrap());
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let value = value.unwrap_or_else(|| panic!("{key}: the function never ran"));
            let sort_order = &value["sort_order"];
            if runtime == "lua" {
                assert_eq!(sort_order, "0", "Lua sees Nakama's string");
            } else {
                assert_eq!(sort_order.as_f64(), Some(0.0), "JavaScript sees a number");
            }
            assert_eq!(value["m"].as_f64(), Some(1.0), "{key}");
            for (field, expected) in [
                ("id", serde_json::json!("every_second")),
                ("operator", serde_json::json!("set")),
                ("title", serde_json::json!("T")),
                ("mode", serde_json::json!(format!("tournament_{event}"))),
                ("numbers", serde_json::json!(true)),
                ("end_is_end_active", serde_json::json!(true)),
            ] {
                assert_eq!(value[field], expected, "{key} {field}: {value}");
            }
        }
        s.stop().await;
    }
}
