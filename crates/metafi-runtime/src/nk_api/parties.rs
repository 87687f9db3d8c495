//! Parties: `party_list` — the parties of every node (in a cluster, other nodes' at most
//! `cluster.party_listing_interval_ms` old), as `GET /v2/party` lists them, and
//! hidden ones too when asked (Nakama's `nk.party_list(limit, open, show_hidden, query,
//! cursor)`).

use metafi_core::ListParties;

use super::{NkArgs, NkCall, NkError, NkFunction, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("party_list"),
    js: Some("partyList"),
    call: NkCall::Sync(party_list),
}];

/// `(limit = 10, open?, show_hidden, query?, cursor?)`. Lua answers `(parties, cursor)`, each
/// party `{match_id, open, maxSize, label}` (Nakama's Lua names the id `match_id`); JS
/// `{parties: [{partyId, open, maxSize, label}], cursor?}`.
fn party_list(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let js = args.is_js();
    let limit_arg = args.at(1);
    let limit = limit_arg
        .opt_integer("expects limit to be a number")?
        .unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(limit_arg.error(if js {
            "limit must be 1-100"
        } else {
            "expects limit to be 1-100"
        }));
    }
    let open = args.at(2).opt_bool(if js {
        "expects boolean"
    } else {
        "expects open true/false or nil"
    })?;
    let hidden_arg = args.at(3);
    let show_hidden = match hidden_arg.opt_bool("boolean expected")? {
        Some(show) => show,
        None if js => false,
        None => return Err(hidden_arg.error("boolean expected, got nil")),
    };
    let query = args
        .at(4)
        .opt_string("expects query to be a string")?
        .unwrap_or_default()
        .to_owned();
    let cursor = args
        .at(5)
        .opt_string("expects cursor to be a string")?
        .unwrap_or_default()
        .to_owned();
    let Some(parties) = nk.parties() else {
        return Err(NkError::failed(
            "failed to list parties: this server runs no parties",
        ));
    };
    let list = parties
        .list_parties(&ListParties {
            limit: limit as usize,
            open,
            show_hidden,
            query,
            cursor,
        })
        .map_err(|e| NkError::failed(format!("failed to list parties: {e}")))?;
    let items: Vec<NkValue> = list
        .parties
        .into_iter()
        .map(|p| {
            let mut party = NkMap::with_capacity(4);
            party.insert_data(if js { "partyId" } else { "match_id" }, p.party_id);
            party.insert_data("open", p.open);
            party.insert_data("maxSize", i64::from(p.max_size));
            party.insert_data("label", p.label);
            NkValue::Map(party)
        })
        .collect();
    let cursor = if list.cursor.is_empty() {
        NkValue::Nil
    } else {
        list.cursor.into()
    };
    if js {
        let mut result = NkMap::with_capacity(2);
        result.insert_data("parties", NkValue::List(items));
        if !matches!(cursor, NkValue::Nil) {
            result.insert_data("cursor", cursor);
        }
        Ok(result.into())
    } else {
        Ok(NkValue::Multi(vec![NkValue::List(items), cursor]))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use std::collections::HashMap;
    use std::sync::Arc;

    use metafi_core::{ManualClock, Objects, PartyDirectory};
    use metafi_proto::api::{Party, PartyList};
    use metafi_storage::Storage;
    use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
    use parking_lot::Mutex;

    use super::*;
    use crate::nk::RuntimeServices;
    use crate::nk_api::Naming;
    use crate::nk_api::test_support::on;
    use crate::testing::FakeMatches;

    /// Answers one party and a cursor, and remembers what it was asked.
    #[derive(Debug, Default)]
    struct Directory {
        asked: Mutex<Vec<ListParties>>,
    }

    impl PartyDirectory for Directory {
        fn list_parties(&self, request: &ListParties) -> Result<PartyList, String> {
            self.asked.lock().push(request.clone());
            if request.cursor == "bad" {
                return Err("invalid cursor".into());
            }
            Ok(PartyList {
                parties: vec![Party {
                    party_id: "p.node".into(),
                    open: true,
                    hidden: false,
                    max_size: 4,
                    label: "{}".into(),
                }],
                cursor: "next".into(),
            })
        }
    }

    async fn nk(directory: Arc<Directory>) -> (Nk, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let config = SqliteConfig {
            path: dir.path().join("metafi.db"),
            ..SqliteConfig::default()
        };
        let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).unwrap());
        let clock = Arc::new(ManualClock::new(0));
        let services = RuntimeServices::new(
            Arc::new(Objects::new(store.clone(), clock.clone())),
            store,
            Arc::new(FakeMatches::default()),
            clock,
        )
        .with_parties(directory);
        (
            Nk::new(services, Arc::from("node"), Arc::new(HashMap::new())),
            dir,
        )
    }

    #[tokio::test]
    async fn lua_and_js_list_with_nakamas_arguments_and_shapes() {
        let directory = Arc::new(Directory::default());
        let (nk, _dir) = nk(directory.clone()).await;
        let lua = on(
            &nk,
            Naming::Snake,
            "party_list",
            vec![NkValue::Nil, true.into(), true.into(), "+label.a:1".into()],
        )
        .await
        .unwrap();
        let NkValue::Multi(values) = lua else {
            panic!("Lua gets two results");
        };
        assert_eq!(
            values[0].to_json(Naming::Snake).unwrap(),
            serde_json::json!([{"match_id": "p.node", "open": true, "maxSize": 4, "label": "{}"}])
        );
        assert_eq!(values[1], NkValue::from("next"));
        assert_eq!(
            directory.asked.lock()[0],
            ListParties {
                limit: 10,
                open: Some(true),
                show_hidden: true,
                query: "+label.a:1".into(),
                cursor: String::new(),
            }
        );
        let js = on(&nk, Naming::Camel, "partyList", vec![5.into()])
            .await
            .unwrap();
        assert_eq!(
            js.to_json(Naming::Camel).unwrap(),
            serde_json::json!({
                "parties": [{"partyId": "p.node", "open": true, "maxSize": 4, "label": "{}"}],
                "cursor": "next"
            })
        );
        assert!(!directory.asked.lock()[1].show_hidden);
    }

    #[tokio::test]
    async fn bad_arguments_and_failures_read_as_nakamas() {
        let (nk, _dir) = nk(Arc::new(Directory::default())).await;
        let lua = |args| on(&nk, Naming::Snake, "party_list", args);
        assert_eq!(
            lua(vec![101.into(), NkValue::Nil, false.into()])
                .await
                .unwrap_err()
                .lua_message("party_list"),
            "bad argument #1 to party_list (expects limit to be 1-100)"
        );
        assert_eq!(
            lua(vec![10.into(), "yes".into(), false.into()])
                .await
                .unwrap_err()
                .lua_message("party_list"),
            "bad argument #2 to party_list (expects open true/false or nil)"
        );
        assert!(
            lua(vec![10.into()]).await.is_err(),
            "show_hidden is required in Lua"
        );
        assert_eq!(
            lua(vec![
                10.into(),
                NkValue::Nil,
                false.into(),
                NkValue::Nil,
                "bad".into()
            ])
            .await
            .unwrap_err(),
            NkError::failed("failed to list parties: invalid cursor")
        );
    }
}
