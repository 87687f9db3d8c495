//! The tournament rows with Nakama's arguments, errors and result shapes, in both languages.

use super::*;
use crate::nk_api::test_support::{T0_MS, nk_with, on};
use crate::nk_api::{Naming, UtilityConfig};

const T0: i64 = T0_MS / 1000;

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

fn arg(position: usize, message: &str) -> Result<NkValue, NkError> {
    Err(NkError::Arg {
        position,
        message: message.to_owned().into(),
    })
}

/// `tournament_create(id, authoritative, "desc", "best", duration, nil, nil, "Cup", "", 2,
/// start, end, max_size, max_num_score, join_required, true)`.
fn create_args(
    id: &str,
    authoritative: bool,
    max_size: i64,
    max_num_score: i64,
    join: bool,
) -> Vec<NkValue> {
    vec![
        s(id),
        authoritative.into(),
        s("desc"),
        s("best"),
        3600i64.into(),
        NkValue::Nil,
        NkValue::Nil,
        s("Cup"),
        s(""),
        2i64.into(),
        NkValue::Nil,
        NkValue::Nil,
        max_size.into(),
        max_num_score.into(),
        join.into(),
        true.into(),
    ]
}

#[tokio::test]
async fn lua_create_join_write_list_and_haystack() {
    let t = nk_with(UtilityConfig::default()).await;
    let nk = &t.nk;
    let lua = |name: &'static str, args: Vec<NkValue>| on(nk, Naming::Snake, name, args);
    lua("tournament_create", create_args("cup", true, 2, 2, true))
        .await
        .expect("create");
    lua("tournament_create", create_args("cup", true, 2, 2, true))
        .await
        .expect("idempotent");
    // Join required: a write before joining is refused with Nakama's text.
    assert_eq!(
        lua("tournament_record_write", vec![s("cup"), owner(1).into()]).await,
        Err(NkError::failed(
            "error writing tournament record: required to join before writing tournament record"
        ))
    );
    for n in 1..=2u128 {
        lua(
            "tournament_join",
            vec![s("cup"), owner(n).into(), s(&format!("u{n}"))],
        )
        .await
        .expect("join");
    }
    assert_eq!(
        lua("tournament_join", vec![s("cup"), owner(3).into(), s("u3")]).await,
        Err(NkError::failed(
            "error joining tournament: tournament max size reached"
        ))
    );
    for n in 1..=2u128 {
        let record = lua(
            "tournament_record_write",
            vec![
                s("cup"),
                owner(n).into(),
                s(&format!("u{n}")),
                (n as i64 * 10).into(),
            ],
        )
        .await
        .expect("write");
        assert_eq!(field(&record, "score"), &NkValue::Int(n as i64 * 10));
        assert_eq!(field(&record, "num_score"), &NkValue::Int(1));
        assert_eq!(field(&record, "max_num_score"), &NkValue::Int(2));
    }
    lua(
        "tournament_add_attempt",
        vec![s("cup"), owner(1).into(), 3i64.into()],
    )
    .await
    .expect("attempts");
    let NkValue::Multi(listed) = lua(
        "tournament_records_list",
        vec![s("cup"), NkValue::Nil, 10i64.into()],
    )
    .await
    .expect("records") else {
        panic!("multiple results");
    };
    let records = listed[0].as_list().expect("records");
    assert_eq!(field(&records[0], "score"), &NkValue::Int(20));
    assert_eq!(field(&records[0], "rank"), &NkValue::Int(1));
    assert_eq!(field(&records[1], "max_num_score"), &NkValue::Int(5));
    assert_eq!(listed[4], NkValue::Int(2), "rank count");
    let NkValue::Multi(around) = lua(
        "tournament_records_haystack",
        vec![s("cup"), owner(1).into(), 1i64.into()],
    )
    .await
    .expect("haystack") else {
        panic!("multiple results");
    };
    assert_eq!(around.len(), 4, "records, next, prev, rank count");
    assert_eq!(
        field(&around[0].as_list().expect("records")[0], "owner_id"),
        &NkValue::from(owner(1))
    );
    // Listing needs explicit times in Lua.
    assert_eq!(
        lua("tournament_list", vec![0i64.into(), 127i64.into()]).await,
        arg(3, "startTime must be >= -1")
    );
    let NkValue::Multi(page) = lua(
        "tournament_list",
        vec![0i64.into(), 127i64.into(), 0i64.into(), 0i64.into()],
    )
    .await
    .expect("list") else {
        panic!("multiple results");
    };
    let tournaments = page[0].as_list().expect("tournaments");
    let cup = &tournaments[0];
    assert_eq!(field(cup, "id"), &s("cup"));
    assert_eq!(field(cup, "title"), &s("Cup"));
    assert_eq!(field(cup, "category"), &NkValue::Int(2));
    assert_eq!(field(cup, "sort_order"), &s("1"));
    assert_eq!(field(cup, "operator"), &s("best"));
    assert_eq!(field(cup, "size"), &NkValue::Int(2));
    assert_eq!(field(cup, "max_size"), &NkValue::Int(2));
    assert_eq!(field(cup, "can_enter"), &NkValue::Bool(false), "full");
    assert_eq!(field(cup, "join_required"), &NkValue::Bool(true));
    assert_eq!(field(cup, "start_time"), &NkValue::Int(T0));
    assert_eq!(field(cup, "end_active"), &NkValue::Int(T0 + 3600));
    assert_eq!(field(cup, "end_time"), &NkValue::Nil);
    assert_eq!(page[1], NkValue::Nil, "no more pages");
    let got = lua(
        "tournaments_get_id",
        vec![NkValue::List(vec![s("cup"), s("nope")])],
    )
    .await
    .expect("get");
    assert_eq!(got.as_list().map(<[NkValue]>::len), Some(1));
    assert_eq!(
        field(&got.as_list().expect("list")[0], "join_required"),
        &NkValue::Bool(false),
        "Nakama's lookup leaves join_required out"
    );
    lua("tournament_record_delete", vec![s("cup"), owner(1).into()])
        .await
        .expect("delete record");
    // Lua's ranks_disable is Nakama's leaderboard function: it refuses tournaments.
    assert_eq!(
        lua("tournament_ranks_disable", vec![s("cup")]).await,
        Err(NkError::failed(
            "error disabling tournament ranks: leaderboard not found"
        ))
    );
    lua("tournament_delete", vec![s("cup")])
        .await
        .expect("delete");
    assert_eq!(
        lua("tournament_record_write", vec![s("cup"), owner(1).into()]).await,
        Err(NkError::failed(
            "error writing tournament record: tournament not found"
        ))
    );
}

#[tokio::test]
async fn lua_arguments_are_checked_as_nakama() {
    let t = nk_with(UtilityConfig::default()).await;
    let lua = |name: &'static str, args: Vec<NkValue>| on(&t.nk, Naming::Snake, name, args);
    assert_eq!(
        lua("tournament_create", vec![s("")]).await,
        arg(1, "expects a tournament ID string")
    );
    assert_eq!(
        lua("tournament_create", vec![s("t")]).await,
        arg(5, "duration must be > 0")
    );
    let mut bad = create_args("t", true, 0, 0, false);
    bad[9] = 128i64.into();
    assert_eq!(
        lua("tournament_create", bad).await,
        arg(10, "category must be 0-127")
    );
    let mut bad = create_args("t", true, 0, 0, false);
    bad[10] = 100i64.into();
    bad[11] = 50i64.into();
    assert_eq!(
        lua("tournament_create", bad).await,
        arg(
            12,
            "endTime must be > startTime. Use 0 to indicate a tournament that never ends."
        )
    );
    assert_eq!(
        lua(
            "tournament_add_attempt",
            vec![s("t"), owner(1).into(), 0i64.into()]
        )
        .await,
        arg(3, "expects an attempt count number != 0")
    );
    assert_eq!(
        lua("tournament_add_attempt", vec![s("t"), s("x"), 1i64.into()]).await,
        arg(2, "expects owner ID to be a valid identifier")
    );
    assert_eq!(
        lua(
            "tournament_add_attempt",
            vec![s("t"), owner(1).into(), 1i64.into()]
        )
        .await,
        Err(NkError::failed(
            "error adding tournament attempts: tournament not found"
        ))
    );
    assert_eq!(
        lua("tournament_join", vec![s("t"), owner(1).into(), s("")]).await,
        arg(3, "expects a username string")
    );
    assert_eq!(
        lua("tournament_list", vec![3i64.into(), 2i64.into()]).await,
        arg(2, "categoryEnd must be >= categoryStart")
    );
    assert_eq!(
        lua(
            "tournament_list",
            vec![
                0i64.into(),
                0i64.into(),
                0i64.into(),
                0i64.into(),
                0i64.into()
            ]
        )
        .await,
        arg(5, "limit must be 1-100")
    );
    assert_eq!(
        lua("tournaments_get_id", vec![NkValue::Nil]).await,
        arg(1, "invalid tournament id list")
    );
    assert_eq!(
        lua(
            "tournament_records_haystack",
            vec![s("t"), owner(1).into(), 0i64.into()]
        )
        .await,
        arg(3, "limit must be 1-100")
    );
    assert_eq!(
        lua("tournament_records_haystack", vec![s("t"), owner(1).into()]).await,
        Err(NkError::failed(
            "error listing tournament records haystack: leaderboard not found"
        ))
    );
    assert_eq!(
        lua(
            "tournament_record_write",
            vec![
                s("t"),
                owner(1).into(),
                NkValue::Nil,
                1i64.into(),
                0i64.into(),
                NkValue::Nil,
                s("nope")
            ]
        )
        .await,
        arg(7, "invalid operator")
    );
    assert_eq!(
        lua(
            "tournament_records_list",
            vec![s("t"), NkValue::List(Vec::new())]
        )
        .await,
        Ok(NkValue::List(Vec::new()))
    );
}

#[tokio::test]
async fn js_results_are_objects_and_writes_follow_the_window() {
    let t = nk_with(UtilityConfig::default()).await;
    let js = |name: &'static str, args: Vec<NkValue>| on(&t.nk, Naming::Camel, name, args);
    let mut args = create_args("later", false, 0, 0, false);
    args[10] = (T0 + 100).into();
    js("tournamentCreate", args).await.expect("create");
    assert_eq!(
        js("tournamentRecordWrite", vec![s("later"), owner(1).into()]).await,
        Err(NkError::failed(
            "error writing tournament record: tournament outside of duration"
        ))
    );
    t.clock.advance_ms(100_000);
    let record = js(
        "tournamentRecordWrite",
        vec![
            s("later"),
            owner(1).into(),
            s("one"),
            7i64.into(),
            0i64.into(),
            NkValue::Nil,
            s("set"),
        ],
    )
    .await
    .expect("write");
    assert_eq!(field(&record, "score"), &NkValue::Int(7));
    assert_eq!(field(&record, "expiry_time"), &NkValue::Nil);
    let page = js("tournamentList", vec![0i64.into(), 127i64.into()])
        .await
        .expect("list");
    let tournaments = field(&page, "tournaments").as_list().expect("list");
    assert_eq!(field(&tournaments[0], "sort_order"), &NkValue::Int(1));
    assert_eq!(field(&tournaments[0], "can_enter"), &NkValue::Bool(true));
    assert_eq!(field(&page, "cursor"), &NkValue::Nil);
    let list = js(
        "tournamentRecordsList",
        vec![s("later"), NkValue::Nil, 10i64.into()],
    )
    .await
    .expect("records");
    assert_eq!(field(&list, "rank_count"), &NkValue::Int(1));
    // JavaScript's ranks_disable works on tournaments.
    js("tournamentsRanksDisable", vec![s("later")])
        .await
        .expect("ranks off");
    assert_eq!(
        js("tournamentsRanksDisable", vec![s("nope")]).await,
        Err(NkError::failed("tournament not found"))
    );
    assert_eq!(
        js(
            "tournamentList",
            vec![0i64.into(), 0i64.into(), 5i64.into()]
        )
        .await,
        arg(4, "end time must be >= start time")
    );
}
