//! Tests of the realtime rows: a [`FakeRealtime`] that records what the rows asked of the
//! realtime layer and answers as a test sets it up, an `Nk` over it, and [`call`], which runs a
//! row by its name in a language as an engine would.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::sync::Arc;

use async_trait::async_trait;
use metafi_core::{CoreError, Objects, SystemClock};
use metafi_match::PresenceReason;
use metafi_proto::api::{ChannelMessage, ChannelMessageList};
use metafi_proto::realtime::Envelope;
use metafi_proto::wkt::{Timestamp, bool_value, int32_value};
use metafi_storage::Storage;
use parking_lot::Mutex;
use uuid::Uuid;

use super::{NkArgs, NkCall, NkError, NkValue, js_function, lua_function};
use crate::nk::{Nk, RuntimeServices};
use crate::realtime_host::{
    ChannelEdit, ChannelSender, RealtimeHost, StreamId, StreamJoin, StreamJoinError, StreamMeta,
    StreamPresence,
};
use crate::testing::FakeMatches;

/// What a row asked of the realtime layer.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    List(StreamId, bool, bool),
    Get(Uuid, Uuid, StreamId),
    Join(Uuid, Uuid, StreamId, StreamJoin),
    Update(Uuid, Uuid, StreamId, StreamJoin),
    Leave(Uuid, Uuid, StreamId),
    Count(StreamId),
    Close(StreamId),
    Send(StreamId, Box<Envelope>, Option<Vec<Uuid>>),
    Disconnect(Uuid, Option<PresenceReason>),
    DisconnectUser(Uuid, PresenceReason),
    Follow(Uuid, Vec<Uuid>),
    Unfollow(Uuid, Vec<Uuid>),
    Channel(ChannelSender, ChannelEdit),
    ListMessages(String, i64, bool, Option<String>),
    Build(Uuid, String, i32),
}

/// Records every call; answers with what the test put in its fields.
#[derive(Debug, Default)]
pub struct FakeRealtime {
    pub asked: Mutex<Vec<Asked>>,
    pub presences: Mutex<Vec<StreamPresence>>,
    pub meta: Mutex<Option<StreamMeta>>,
    /// The answer of join and update; `Ok(true)` unless set.
    pub join: Mutex<Option<StreamJoinError>>,
    pub messages: Mutex<ChannelMessageList>,
}

impl FakeRealtime {
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().clone()
    }

    fn ask(&self, asked: Asked) {
        self.asked.lock().push(asked);
    }
}

#[async_trait]
impl RealtimeHost for FakeRealtime {
    fn stream_user_list(
        &self,
        stream: &StreamId,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<StreamPresence> {
        self.ask(Asked::List(
            stream.clone(),
            include_hidden,
            include_not_hidden,
        ));
        self.presences.lock().clone()
    }

    fn stream_user_get(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
    ) -> Option<StreamMeta> {
        self.ask(Asked::Get(user_id, session_id, stream.clone()));
        self.meta.lock().clone()
    }

    async fn stream_user_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
        join: StreamJoin,
    ) -> Result<bool, StreamJoinError> {
        self.ask(Asked::Join(user_id, session_id, stream.clone(), join));
        match self.join.lock().clone() {
            Some(error) => Err(error),
            None => Ok(true),
        }
    }

    async fn stream_user_update(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
        join: StreamJoin,
    ) -> Result<(), StreamJoinError> {
        self.ask(Asked::Update(user_id, session_id, stream.clone(), join));
        match self.join.lock().clone() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn stream_user_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamId) {
        self.ask(Asked::Leave(user_id, session_id, stream.clone()));
    }

    fn stream_count(&self, stream: &StreamId) -> usize {
        self.ask(Asked::Count(stream.clone()));
        self.presences.lock().len()
    }

    fn stream_close(&self, stream: &StreamId) {
        self.ask(Asked::Close(stream.clone()));
    }

    fn stream_send(&self, stream: &StreamId, envelope: Envelope, only: Option<&[Uuid]>) -> usize {
        self.ask(Asked::Send(
            stream.clone(),
            Box::new(envelope),
            only.map(<[Uuid]>::to_vec),
        ));
        1
    }

    fn session_disconnect(&self, session_id: Uuid, reason: Option<PresenceReason>) -> bool {
        self.ask(Asked::Disconnect(session_id, reason));
        true
    }

    fn user_disconnect(&self, user_id: Uuid, reason: PresenceReason) -> usize {
        self.ask(Asked::DisconnectUser(user_id, reason));
        0
    }

    fn status_follow(&self, session_id: Uuid, user_ids: &[Uuid]) -> Result<(), CoreError> {
        self.ask(Asked::Follow(session_id, user_ids.to_vec()));
        Ok(())
    }

    fn status_unfollow(&self, session_id: Uuid, user_ids: &[Uuid]) {
        self.ask(Asked::Unfollow(session_id, user_ids.to_vec()));
    }

    async fn channel_message(
        &self,
        from: ChannelSender,
        edit: ChannelEdit,
    ) -> Result<ChannelMessage, CoreError> {
        self.ask(Asked::Channel(from.clone(), edit.clone()));
        let (code, message_id, content) = match edit {
            ChannelEdit::Send { content } => (0, Uuid::nil().to_string(), content),
            ChannelEdit::Update {
                message_id,
                content,
            } => (1, message_id, content),
            ChannelEdit::Remove { message_id } => {
                if from.persist {
                    return Err(CoreError::invalid(
                        "Could not find message to remove in channel history",
                    ));
                }
                (2, message_id, "{}".to_owned())
            }
        };
        Ok(ChannelMessage {
            channel_id: from.channel.to_string(),
            message_id,
            code: int32_value(code),
            sender_id: from.sender.to_string(),
            username: from.username,
            content,
            create_time: Some(Timestamp::from_millis(1_700_000_000_000)),
            update_time: Some(Timestamp::from_millis(1_700_000_001_000)),
            persistent: bool_value(from.persist),
            ..ChannelMessage::default()
        })
    }

    async fn channel_messages_list(
        &self,
        channel_id: &str,
        limit: i64,
        forward: bool,
        cursor: Option<&str>,
    ) -> Result<ChannelMessageList, CoreError> {
        self.ask(Asked::ListMessages(
            channel_id.to_owned(),
            limit,
            forward,
            cursor.map(str::to_owned),
        ));
        Ok(self.messages.lock().clone())
    }

    async fn channel_id_build(
        &self,
        sender: Uuid,
        target: &str,
        kind: i32,
    ) -> Result<String, CoreError> {
        self.ask(Asked::Build(sender, target.to_owned(), kind));
        if target == "nobody" {
            return Err(CoreError::invalid(
                "User ID not found: Invalid channel target",
            ));
        }
        Ok(format!("2...{target}"))
    }
}

/// An `Nk` over a fresh SQLite store, with `realtime` as its realtime layer (or none).
pub struct Harness {
    pub nk: Nk,
    pub realtime: Arc<FakeRealtime>,
    _dir: tempfile::TempDir,
}

pub async fn harness(with_realtime: bool) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let config = metafi_storage_sqlite::SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..metafi_storage_sqlite::SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(
        tokio::task::spawn_blocking(move || metafi_storage_sqlite::SqliteStorage::open(config))
            .await
            .unwrap()
            .unwrap(),
    );
    let realtime = Arc::new(FakeRealtime::default());
    let mut services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store,
        Arc::new(FakeMatches::default()),
        Arc::new(SystemClock),
    );
    if with_realtime {
        services = services.with_realtime(realtime.clone());
    }
    Harness {
        nk: Nk::new(services, "node-1".into(), Arc::default()),
        realtime,
        _dir: dir,
    }
}

/// The language a test calls a row from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Lua,
    Js,
}

/// Calls the row `name` (in `lang`'s spelling) with `args`, as an engine would.
pub async fn call(nk: &Nk, lang: Lang, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    let (row, naming) = match lang {
        Lang::Lua => (lua_function(name), super::Naming::Snake),
        Lang::Js => (js_function(name), super::Naming::Camel),
    };
    let row = row.unwrap_or_else(|| panic!("no row named {name} in {lang:?}"));
    let args = NkArgs::new(naming, args);
    match row.call {
        NkCall::Sync(f) => f(nk, args),
        NkCall::Async(f) => f(nk.clone(), args).await,
        NkCall::Unserved(why) => Err(why.error(name)),
    }
}

/// A map with user-data keys, as an engine hands over a table or object.
pub fn map(entries: &[(&str, NkValue)]) -> NkValue {
    let mut map = super::NkMap::new();
    for (key, value) in entries {
        map.insert_data(*key, value.clone());
    }
    map.into()
}

/// The Lua error text of a failed call to `name`.
pub fn lua_error(result: Result<NkValue, NkError>, name: &str) -> String {
    result.unwrap_err().lua_message(name)
}
