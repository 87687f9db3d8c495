//! Agones Lists (`[agones] players_list`, `matches_list`): the node keeps a List of its players
//! (the user ids of its realtime sessions) and one of its authoritative matches (their ids) in
//! its `GameServer`, up to each List's capacity, through the beta SDK calls `GetList`,
//! `UpdateList` (capacity only), `AddListValue` and `RemoveListValue`. Allocators and fleet
//! tools read them (`players` to find a player's server, `matches` to send a party to its
//! match's server).
//!
//! What the List holds is known from each call's answer (every answer is the whole List), so
//! an update sends only what changed: removals first (they make room), then additions while
//! the List has room. Values over the capacity wait until room is made; their number is logged
//! and set on `metafi_agones_list_left_out{list}`.

use std::collections::{BTreeSet, HashSet};

use super::grpc::{Channel, status_code};
use super::proto::{self, FieldMask, GetListRequest, List, ListValueRequest, UpdateListRequest};

/// gRPC codes the List calls answer with.
const NOT_FOUND: u32 = 5;
const ALREADY_EXISTS: u32 = 6;
const OUT_OF_RANGE: u32 = 11;

/// One List the node keeps.
#[derive(Debug)]
pub(crate) struct ListKeeper {
    /// `players` or `matches`: a log field and metric label.
    kind: &'static str,
    name: String,
    /// Capacity to set at start; `None` keeps what the GameServer spec declares.
    capacity: Option<i64>,
    /// What the List holds, from the last answer; `None` until read (or after a failure).
    known: Option<Known>,
    /// The GameServer declares no such List: it is not tried again.
    missing: bool,
}

#[derive(Debug)]
struct Known {
    capacity: i64,
    values: BTreeSet<String>,
}

impl Known {
    fn from(list: List) -> Known {
        Known {
            capacity: list.capacity,
            values: list.values.into_iter().collect(),
        }
    }
}

impl ListKeeper {
    pub(crate) fn new(kind: &'static str, name: String, capacity: Option<i64>) -> ListKeeper {
        ListKeeper {
            kind,
            name,
            capacity,
            known: None,
            missing: false,
        }
    }

    /// Brings the List to `wanted` (in priority order: values earlier in it are added first
    /// when the List has room for only some).
    pub(crate) async fn sync(&mut self, channel: &Channel, wanted: &[String]) {
        if self.missing {
            return;
        }
        if self.known.is_none() {
            match self.read(channel).await {
                Ok(list) => self.known = Some(Known::from(list)),
                Err(e) => {
                    self.failed("reading", &e);
                    return;
                }
            }
        }
        let wanted_set: HashSet<&str> = wanted.iter().map(String::as_str).collect();
        let Some(known) = self.known.as_ref() else {
            return;
        };
        let gone: Vec<String> = known
            .values
            .iter()
            .filter(|v| !wanted_set.contains(v.as_str()))
            .cloned()
            .collect();
        for value in gone {
            match self
                .call(channel, proto::path::REMOVE_LIST_VALUE, &value)
                .await
            {
                Ok(list) => self.known = Some(Known::from(list)),
                // Not in the List (someone else removed it): as good as removed.
                Err(e) if status_code(&e) == Some(NOT_FOUND) => {
                    if let Some(known) = self.known.as_mut() {
                        known.values.remove(&value);
                    }
                }
                Err(e) => {
                    self.failed("removing a value from", &e);
                    return;
                }
            }
        }
        let mut left_out = 0usize;
        for value in wanted {
            let Some(known) = self.known.as_ref() else {
                return;
            };
            if known.values.contains(value) {
                continue;
            }
            if known.values.len() as i64 >= known.capacity {
                left_out += 1;
                continue;
            }
            match self.call(channel, proto::path::ADD_LIST_VALUE, value).await {
                Ok(list) => self.known = Some(Known::from(list)),
                Err(e) if status_code(&e) == Some(ALREADY_EXISTS) => {
                    if let Some(known) = self.known.as_mut() {
                        known.values.insert(value.clone());
                    }
                }
                // Full after all (its capacity changed): the rest waits for room.
                Err(e) if status_code(&e) == Some(OUT_OF_RANGE) => {
                    if let Some(known) = self.known.as_mut() {
                        known.capacity = known.values.len() as i64;
                    }
                    left_out += 1;
                }
                Err(e) => {
                    self.failed("adding a value to", &e);
                    return;
                }
            }
        }
        metrics::gauge!("metafi_agones_list_left_out", "list" => self.kind).set(left_out as f64);
        if left_out > 0 {
            tracing::debug!(list = %self.name, kind = self.kind, left_out, "Agones: List at capacity; values left out until room is made");
        }
    }

    /// The List as Agones has it; at the first read its capacity is set when configured.
    async fn read(&self, channel: &Channel) -> anyhow::Result<List> {
        match self.capacity {
            Some(capacity) => {
                let request = UpdateListRequest {
                    list: Some(List {
                        name: self.name.clone(),
                        capacity,
                        values: Vec::new(),
                    }),
                    update_mask: Some(FieldMask {
                        paths: vec!["capacity".into()],
                    }),
                };
                channel
                    .unary::<_, List>(proto::path::UPDATE_LIST, &request)
                    .await
            }
            None => {
                let request = GetListRequest {
                    name: self.name.clone(),
                };
                channel
                    .unary::<_, List>(proto::path::GET_LIST, &request)
                    .await
            }
        }
    }

    async fn call(&self, channel: &Channel, path: &str, value: &str) -> anyhow::Result<List> {
        let request = ListValueRequest {
            name: self.name.clone(),
            value: value.to_owned(),
        };
        channel.unary::<_, List>(path, &request).await
    }

    fn failed(&mut self, doing: &str, error: &anyhow::Error) {
        // Read the List again next time: what it holds is no longer known.
        self.known = None;
        if status_code(error) == Some(NOT_FOUND) && doing == "reading" {
            tracing::warn!(list = %self.name, kind = self.kind, error = %error, "Agones: the GameServer declares no such List (add it to spec.lists, or unset agones.{}_list); it is no longer kept", self.kind);
            self.missing = true;
        } else {
            tracing::warn!(list = %self.name, kind = self.kind, error = %error, "Agones: {doing} the List failed; retrying at the next update");
        }
    }
}
