//! Leaderboard resets on a real node: a module creates a board that resets every second and
//! registers a reset function; the scheduler calls it with the board (as each runtime shows
//! it) and the end of the period, and the function's storage write is read back over REST.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::time::Duration;

use metafi_testkit::{Http, TestNode};

const LUA: &str = r#"
local nk = require("nakama")
nk.leaderboard_create("every_second", false, "asc", "set", "* * * * * * *", { m = 1 }, true)
nk.register_leaderboard_reset(function(context, leaderboard, reset)
  nk.storage_write({ { collection = "resets", key = "lua", value = {
    id = leaderboard.id, sort_order = leaderboard.sort_order, operator = leaderboard.operator,
    m = leaderboard.metadata.m, mode = context.execution_mode,
    reset_is_number = type(reset) == "number", next_after_reset = tonumber(leaderboard.next_reset) > reset
  }, permission_read = 2, permission_write = 0 } })
end)
"#;

const JS: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  nk.leaderboardCreate("every_second", false, "asc", "set", "* * * * * * *", { m: 1 }, true);
  initializer.registerLeaderboardReset(function (ctx, logger, nk, leaderboard, reset) {
    nk.storageWrite([{ collection: "resets", key: "js", value: {
      id: leaderboard.id, sort_order: leaderboard.sortOrder, operator: leaderboard.operator,
      m: leaderboard.metadata.m, mode: ctx.executionMode,
      reset_is_number: typeof reset === "number", next_after_reset: leaderboard.nextReset > reset
    }, permissionRead: 2, permissionWrite: 0 }]);
  });
}
"#;

async fn server(dir: &Path, runtime: &str) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    match runtime {
        "lua" => std::fs::write(modules.join("resets.lua"), LUA).unwrap(),
        _ => std::fs::write(modules.join("resets.js"), JS).unwrap(),
    }
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
    })
    .await
}

#[tokio::test]
async fn the_reset_function_runs_when_a_period_ends() {
    for runtime in ["lua", "js"] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(dir.path(), runtime).await;
        let http = Http::new(&s.base);
        let (token, _) = http.new_session().await;
        let mut value = None;
        // The board resets every second; wait for the first call (not a timing assertion:
        // up to 20 s on a loaded machine).
        for _ in 0..200 {
            let read = http
                .send(http.post("/v2/storage").bearer_auth(&token).json(
                    &serde_json::json!({ "object_ids": [{ "collection": "resets", "key": runtime }] }),
                ))
                .await;
            if let Some(text) = read.body["objects"][0]["value"].as_str() {
                value = Some(serde_json::from_str::<serde_json::Value>(text).unwrap());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let value = value.unwrap_or_else(|| panic!("{runtime}: the reset function never ran"));
        // JavaScript numbers come back as floats from its storage write; compare as numbers.
        let sort_order = &value["sort_order"];
        if runtime == "lua" {
            assert_eq!(sort_order, "0", "Lua sees Nakama's string");
        } else {
            assert_eq!(sort_order.as_f64(), Some(0.0), "JavaScript sees a number");
        }
        assert_eq!(value["m"].as_f64(), Some(1.0), "{runtime}");
        for (field, expected) in [
            ("id", serde_json::json!("every_second")),
            ("operator", serde_json::json!("set")),
            ("mode", serde_json::json!("leaderboard_reset")),
            ("reset_is_number", serde_json::json!(true)),
            ("next_after_reset", serde_json::json!(true)),
        ] {
            assert_eq!(value[field], expected, "{runtime} {field}: {value}");
        }
        s.stop().await;
    }
}
