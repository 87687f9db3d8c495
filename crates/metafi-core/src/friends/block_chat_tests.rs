//! Blocks and direct chats, as Nakama: a block ends the two users' direct chat, and a user
//! cannot join a direct chat with someone who blocked them (`UserExistsAndDoesNotBlock`).

use std::sync::Arc;

use metafi_proto::api;
use metafi_proto::realtime::channel_type;
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use uuid::Uuid;

use super::*;
use crate::{Channels, ManualClock, NoGroups, NobodyOnline};

#[derive(Debug, Default)]
struct Quiet;

#[async_trait::async_trait]
impl Notifier for Quiet {
    async fn notify(&self, _: Vec<NewNotification>) -> Result<(), CoreError> {
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Closed(Mutex<Vec<ChannelId>>);

impl ChannelPush for Closed {
    fn deliver(&self, _: &ChannelId, _: api::ChannelMessage) -> usize {
        0
    }
    fn remove_user(&self, _: &ChannelId, _: Uuid) {}
    fn close(&self, channel: &ChannelId) {
        self.0.lock().push(channel.clone());
    }
}

async fn user(store: &Arc<dyn Storage>, name: &str) -> Actor {
    let id = Uuid::new_v4();
    store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: NewIdentity::Device {
                id: format!("device-{name}"),
            },
            now_ms: 1,
        })
        .await
        .expect("user");
    Actor {
        id,
        username: name.to_owned(),
    }
}

#[tokio::test]
async fn a_block_ends_the_direct_chat_and_the_blocked_user_cannot_rejoin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("block.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let closed = Arc::new(Closed::default());
    let friends = Friends::new(
        store.clone(),
        Arc::new(Quiet),
        Arc::new(NobodyOnline),
        clock.clone(),
        FriendsConfig::default(),
    )
    .with_channel_push(closed.clone());
    let channels = Channels::new(store.clone(), Arc::new(NoGroups), clock);
    let (ada, bob) = (user(&store, "ada").await, user(&store, "bob").await);
    let dm = |who: &Actor, other: &Actor| {
        let (who, target) = (who.id, other.id.to_string());
        let channels = &channels;
        async move {
            channels
                .resolve_join(who, &target, channel_type::DIRECT_MESSAGE)
                .await
        }
    };
    assert_eq!(
        dm(&bob, &ada).await.expect("before"),
        ChannelId::direct(ada.id, bob.id)
    );

    friends
        .block(&ada, Targets::checked(vec![bob.id], Vec::new()))
        .await
        .expect("block");
    assert_eq!(
        *closed.0.lock(),
        vec![ChannelId::direct(ada.id, bob.id)],
        "the block empties the direct chat"
    );
    let refused = dm(&bob, &ada).await.expect_err("blocked");
    assert_eq!(refused.code(), metafi_proto::Code::InvalidArgument);
    assert_eq!(
        refused.client_message(),
        "User ID not found: Invalid channel target"
    );
    // The blocker may still open it (Nakama checks the other side's block only).
    assert_eq!(
        dm(&ada, &bob).await.expect("blocker"),
        ChannelId::direct(ada.id, bob.id)
    );

    // Unblocking (deleting the block) lets the blocked user in again.
    friends
        .delete(&ada, Targets::checked(vec![bob.id], Vec::new()))
        .await
        .expect("unblock");
    assert!(dm(&bob, &ada).await.is_ok());
}
