//! The leaderboard rows with Nakama's arguments, errors and result shapes, in both languages.

use super::*;
use crate::nk_api::test_support::{nk_with, on};
use crate::nk_api::{Naming, UtilityConfig};

fn s(text: &str) -> NkValue {
    text.into()
}

fn owner(n: u128) -> String {
    Uuid::from_u128(n).to_string()
}

fn field<'a>(value: &'a NkValue, name: &str) -> &'a NkValue {
    value
        .as_map()
        .and_then(|m| m.get(name))
        .unwrap_or_else(|| panic!("no field {name} in {value:?}"))
}

#[tokio::test]
async fn lua_create_write_list_and_haystack() {
    let t = nk_with(UtilityConfig::default()).await;
    let nk = &t.nk;
    let lua = |name: &'static str, args: Vec<NkValue>| on(nk, Naming::Snake, name, args);
    lua(
        "leaderboard_create",
        vec![
            s("lb"),
            true.into(),
            s("desc"),
            s("incr"),
            NkValue::Nil,
            NkValue::Nil,
            true.into(),
        ],
    )
    .await
    .expect("create");
    // Creating again is not an error.
    lua("leaderboard_create", vec![s("lb")])
        .await
        .expect("again");
    for n in 1..=5u128 {
        let record = lua(
            "leaderboard_record_write",
            vec![
                s("lb"),
                owner(n).into(),
                s(&format!("u{n}")),
                (n as i64 * 10).into(),
            ],
        )
        .await
        .expect("write");
        assert_eq!(field(&record, "score"), &NkValue::Int(n as i64 * 10));
        assert_eq!(field(&record, "rank"), &NkValue::Int(1));
        assert_eq!(field(&record, "expiry_time"), &NkValue::Nil);
    }
    // Increment on the authoritative board, as the server.
    let record = lua(
        "leaderboard_record_write",
        vec![s("lb"), owner(1).into(), NkValue::Nil, 45i64.into()],
    )
    .await
    .expect("increment");
    assert_eq!(field(&record, "score"), &NkValue::Int(55));
    assert_eq!(field(&record, "num_score"), &NkValue::Int(2));
    assert_eq!(field(&record, "username"), &s("u1"), "kept");
    let NkValue::Multi(out) = lua(
        "leaderboard_records_list",
        vec![s("lb"), NkValue::List(vec![owner(3).into()]), 2i64.into()],
    )
    .await
    .expect("list") else {
        panic!("five results");
    };
    assert_eq!(out.len(), 5);
    let records = out[0].as_list().expect("records");
    let scores: Vec<_> = records.iter().map(|r| field(r, "score").clone()).collect();
    assert_eq!(scores, [NkValue::Int(55), NkValue::Int(50)]);
    assert_eq!(
        field(&out[1].as_list().expect("owners")[0], "rank"),
        &NkValue::Int(4)
    );
    assert!(out[2].as_str().is_some(), "a next cursor");
    assert_eq!(out[3], NkValue::Nil, "no previous page");
    assert_eq!(out[4], NkValue::Int(5));
    let NkValue::Multi(around) = lua(
        "leaderboard_records_haystack",
        vec![s("lb"), owner(3).into(), 3i64.into()],
    )
    .await
    .expect("haystack") else {
        panic!("four results");
    };
    assert_eq!(around.len(), 4);
    let ranks: Vec<_> = around[0]
        .as_list()
        .expect("records")
        .iter()
        .map(|r| field(r, "rank").clone())
        .collect();
    assert_eq!(ranks, [NkValue::Int(3), NkValue::Int(4), NkValue::Int(5)]);
    let cursor = lua(
        "leaderboard_records_list_cursor_from_rank",
        vec![s("lb"), 4i64.into()],
    )
    .await
    .expect("cursor");
    let NkValue::Multi(from_rank) = lua(
        "leaderboard_records_list",
        vec![s("lb"), NkValue::Nil, 10i64.into(), cursor],
    )
    .await
    .expect("from rank") else {
        panic!("five results");
    };
    assert_eq!(from_rank[0].as_list().expect("records").len(), 2);
    lua("leaderboard_record_delete", vec![s("lb"), owner(1).into()])
        .await
        .expect("delete");
    let boards = lua(
        "leaderboards_get_id",
        vec![NkValue::List(vec![s("lb"), s("x")])],
    )
    .await
    .expect("get");
    let board = &boards.as_list().expect("list")[0];
    assert_eq!(field(board, "sort_order"), &s("1"));
    assert_eq!(field(board, "operator"), &s("increment"));
    assert_eq!(field(board, "authoritative"), &NkValue::Bool(true));
    lua("leaderboard_delete", vec![s("lb")])
        .await
        .expect("delete board");
    let gone = lua("leaderboard_record_write", vec![s("lb"), owner(1).into()]).await;
    assert_eq!(
        gone,
        Err(NkError::failed(
            "error writing leaderboard record: leaderboard not found"
        ))
    );
}

#[tokio::test]
async fn lua_arguments_are_checked_as_nakama() {
    let t = nk_with(UtilityConfig::default()).await;
    let lua = |name: &'static str, args: Vec<NkValue>| on(&t.nk, Naming::Snake, name, args);
    let arg = |position, message: &str| {
        Err(NkError::Arg {
            position,
            message: message.to_owned().into(),
        })
    };
    assert_eq!(
        lua("leaderboard_create", vec![s("")]).await,
        arg(1, "expects a leaderboard ID string")
    );
    assert_eq!(
        lua("leaderboard_create", vec![s("a"), false.into(), s("up")]).await,
        arg(3, "expects sort order to be 'asc' or 'desc'")
    );
    assert_eq!(
        lua(
            "leaderboard_create",
            vec![s("a"), false.into(), s("asc"), s("max")]
        )
        .await,
        arg(4, "expects operator to be 'best', 'set', 'decr' or 'incr'")
    );
    assert_eq!(
        lua(
            "leaderboard_create",
            vec![s("a"), false.into(), s("asc"), s("set"), s("nope")]
        )
        .await,
        arg(5, "expects reset schedule to be a valid CRON expression")
    );
    lua("leaderboard_create", vec![s("a")])
        .await
        .expect("create");
    assert_eq!(
        lua("leaderboard_record_write", vec![s("a"), s("x")]).await,
        arg(2, "expects owner ID to be a valid identifier")
    );
    assert_eq!(
        lua(
            "leaderboard_record_write",
            vec![s("a"), owner(1).into(), NkValue::Nil, (-1i64).into()]
        )
        .await,
        arg(4, "expects score to be >= 0")
    );
    assert_eq!(
        lua(
            "leaderboard_record_write",
            vec![
                s("a"),
                owner(1).into(),
                NkValue::Nil,
                1i64.into(),
                1i64.into(),
                NkValue::Nil,
                s("max")
            ]
        )
        .await,
        arg(7, "invalid operator")
    );
    assert_eq!(
        lua(
            "leaderboard_records_list",
            vec![s("a"), NkValue::Nil, 10_001i64.into()]
        )
        .await,
        arg(3, "expects limit to be 0-10000")
    );
    assert_eq!(
        lua(
            "leaderboard_records_haystack",
            vec![s("a"), owner(1).into(), 0i64.into()]
        )
        .await,
        arg(3, "limit must be 1-100")
    );
    assert_eq!(
        lua("leaderboard_list", vec![0i64.into()]).await,
        arg(1, "limit must be 1-100")
    );
    assert_eq!(
        lua(
            "leaderboard_records_list_cursor_from_rank",
            vec![s("a"), 0i64.into()]
        )
        .await,
        arg(2, "invalid rank - must be > 1")
    );
    assert_eq!(
        lua("leaderboards_get_id", vec![NkValue::Nil]).await,
        arg(1, "invalid tournament id list")
    );
    // An empty owner list answers one empty table, as Nakama.
    assert_eq!(
        lua(
            "leaderboard_records_list",
            vec![s("a"), NkValue::List(Vec::new())]
        )
        .await,
        Ok(NkValue::List(Vec::new()))
    );
}

#[tokio::test]
async fn js_results_are_objects() {
    let t = nk_with(UtilityConfig::default()).await;
    let js = |name: &'static str, args: Vec<NkValue>| on(&t.nk, Naming::Camel, name, args);
    js(
        "leaderboardCreate",
        vec![s("j"), false.into(), s("asc"), s("best"), s("0 0 * * *")],
    )
    .await
    .expect("create");
    let metadata = NkValue::Map(NkMap::new().with("lap", 3i64));
    let record = js(
        "leaderboardRecordWrite",
        vec![
            s("j"),
            owner(7).into(),
            s("seven"),
            12i64.into(),
            1i64.into(),
            metadata,
        ],
    )
    .await
    .expect("write");
    assert_eq!(
        field(&record, "expiry_time"),
        &NkValue::Int(1_700_006_400),
        "the next midnight"
    );
    assert_eq!(field(field(&record, "metadata"), "lap"), &NkValue::Int(3));
    let list = js(
        "leaderboardRecordsList",
        vec![s("j"), NkValue::Nil, 10i64.into()],
    )
    .await
    .expect("list");
    assert_eq!(
        field(&list, "records").as_list().map(<[NkValue]>::len),
        Some(1)
    );
    assert_eq!(field(&list, "next_cursor"), &NkValue::Nil);
    assert_eq!(
        field(&list, "rank_count"),
        &NkValue::Int(0),
        "ranks are off"
    );
    let boards = js("leaderboardList", vec![]).await.expect("list boards");
    let first = &field(&boards, "leaderboards").as_list().expect("boards")[0];
    assert_eq!(field(first, "sort_order"), &NkValue::Int(0));
    assert_eq!(field(first, "next_reset"), &NkValue::Int(1_700_006_400));
    assert_eq!(field(first, "prev_reset"), &NkValue::Int(1_699_920_000));
    assert_eq!(field(&boards, "cursor"), &NkValue::Nil);
    let haystack = js("leaderboardRecordsHaystack", vec![s("j"), owner(7).into()])
        .await
        .expect("haystack");
    assert_eq!(
        field(&haystack, "records").as_list().map(<[NkValue]>::len),
        Some(1)
    );
    let missing = js("leaderboardRanksDisable", vec![s("nope")]).await;
    assert_eq!(missing, Err(NkError::failed("leaderboard not found")));
}
