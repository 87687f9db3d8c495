//! System messages in the group's channel: which membership change writes which code, to
//! whom it is delivered, and who is taken out of the channel (Nakama's `core_group.go`).

use std::sync::Arc;

use metafi_proto::api;
use metafi_storage::{Direction, NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use uuid::Uuid;

use crate::channels::message_code as code;
use crate::groups::{Actor, CreateGroup, Groups};
use crate::{
    ChannelId, ChannelPush, CoreError, ManualClock, NewNotification, NobodyOnline, Notifier,
};

#[derive(Debug, Default)]
struct Quiet;

#[async_trait::async_trait]
impl Notifier for Quiet {
    async fn notify(&self, _: Vec<NewNotification>) -> Result<(), CoreError> {
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Seen {
    delivered: Vec<(ChannelId, api::ChannelMessage)>,
    removed: Vec<(ChannelId, Uuid)>,
    closed: Vec<ChannelId>,
}

#[derive(Debug, Default)]
struct Push(Mutex<Seen>);

impl ChannelPush for Push {
    fn deliver(&self, channel: &ChannelId, message: api::ChannelMessage) -> usize {
        self.0.lock().delivered.push((channel.clone(), message));
        1
    }
    fn remove_user(&self, channel: &ChannelId, user_id: Uuid) {
        self.0.lock().removed.push((channel.clone(), user_id));
    }
    fn close(&self, channel: &ChannelId) {
        self.0.lock().closed.push(channel.clone());
    }
}

struct World {
    groups: Groups,
    store: Arc<dyn Storage>,
    push: Arc<Push>,
    _dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Storage> = Arc::new(
            SqliteStorage::open(SqliteConfig {
                path: dir.path().join("groups.db"),
                ..SqliteConfig::default()
            })
            .expect("open"),
        );
        let push = Arc::new(Push::default());
        let groups = Groups::new(
            Arc::clone(&store),
            Arc::new(Quiet),
            Arc::new(NobodyOnline),
            Arc::new(ManualClock::new(1_700_000_000_000)),
        )
        .with_channel_push(push.clone());
        World {
            groups,
            store,
            push,
            _dir: dir,
        }
    }

    async fn user(&self, name: &str) -> Uuid {
        let id = Uuid::new_v4();
        self.store
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
        id
    }

    async fn group(&self, owner: Uuid, open: bool) -> Uuid {
        let group = self
            .groups
            .create(
                owner,
                owner,
                CreateGroup {
                    name: format!("g-{}", Uuid::new_v4()),
                    open,
                    ..CreateGroup::default()
                },
            )
            .await
            .expect("create");
        Uuid::parse_str(&group.id).expect("id")
    }

    /// The (code, sender, username) delivered since the last call.
    fn delivered(&self) -> Vec<(i32, Uuid, String)> {
        std::mem::take(&mut self.push.0.lock().delivered)
            .into_iter()
            .map(|(_, m)| {
                assert_eq!(m.content, "{}");
                assert_eq!(m.persistent, metafi_proto::wkt::bool_value(true));
                (
                    m.code.map(|c| c.value).unwrap_or_default(),
                    Uuid::parse_str(&m.sender_id).expect("sender"),
                    m.username,
                )
            })
            .collect()
    }

    fn removed(&self) -> Vec<Uuid> {
        std::mem::take(&mut self.push.0.lock().removed)
            .into_iter()
            .map(|(_, user)| user)
            .collect()
    }
}

#[tokio::test]
async fn every_membership_change_writes_and_delivers_its_system_message() {
    let w = World::new();
    let owner = w.user("owner").await;
    let bob = w.user("bob").await;
    let carol = w.user("carol").await;
    let dave = w.user("dave").await;
    let eve = w.user("eve").await;
    let open = w.group(owner, true).await;
    let channel = ChannelId::Group { group_id: open };

    w.groups.join(bob, "bob", open).await.expect("join");
    assert_eq!(w.delivered(), vec![(code::GROUP_JOIN, bob, "bob".into())]);
    w.groups.join(bob, "bob", open).await.expect("join again");
    assert!(w.delivered().is_empty(), "joining again changes nothing");

    w.groups
        .add(Actor::User(owner), open, &[carol, bob])
        .await
        .expect("add");
    assert_eq!(
        w.delivered(),
        vec![(code::GROUP_ADD, carol, "carol".into())],
        "only the user who became a member"
    );

    w.groups
        .promote(Actor::User(owner), open, &[bob])
        .await
        .expect("promote");
    assert_eq!(
        w.delivered(),
        vec![(code::GROUP_PROMOTE, bob, "bob".into())]
    );
    w.groups
        .demote(Actor::User(owner), open, &[bob])
        .await
        .expect("demote");
    assert_eq!(w.delivered(), vec![(code::GROUP_DEMOTE, bob, "bob".into())]);
    w.groups
        .demote(Actor::User(owner), open, &[bob])
        .await
        .expect("demote a member");
    assert!(
        w.delivered().is_empty(),
        "a member cannot be demoted further"
    );

    w.groups
        .kick(Actor::User(owner), open, &[bob])
        .await
        .expect("kick");
    assert_eq!(w.delivered(), vec![(code::GROUP_KICK, bob, "bob".into())]);
    assert_eq!(w.removed(), vec![bob], "a kicked user leaves the channel");

    w.groups
        .ban(Actor::Server, open, &[carol])
        .await
        .expect("ban");
    assert_eq!(
        w.delivered(),
        vec![(code::GROUP_BAN, carol, "carol".into())]
    );
    assert_eq!(w.removed(), vec![carol], "a banned user leaves the channel");

    w.groups.join(eve, "eve", open).await.expect("join");
    w.delivered();
    w.groups.leave(eve, open).await.expect("leave");
    assert_eq!(w.delivered(), vec![(code::GROUP_LEAVE, eve, "eve".into())]);
    assert_eq!(w.removed(), vec![eve], "a user who left leaves the channel");

    // The messages are the channel's history, in order.
    let history = w
        .store
        .list_messages(&channel.to_string(), Direction::Forward, 100, None)
        .await
        .expect("history");
    let codes: Vec<(i32, Uuid)> = history
        .messages
        .iter()
        .map(|m| (m.code, m.sender_id))
        .collect();
    assert_eq!(
        codes,
        vec![
            (code::GROUP_JOIN, bob),
            (code::GROUP_ADD, carol),
            (code::GROUP_PROMOTE, bob),
            (code::GROUP_DEMOTE, bob),
            (code::GROUP_KICK, bob),
            (code::GROUP_BAN, carol),
            (code::GROUP_JOIN, eve),
            (code::GROUP_LEAVE, eve),
        ]
    );

    // A closed group: a join request writes nothing; kicking or banning one writes nothing
    // and takes nobody out (Nakama only announces removed members).
    let closed = w.group(owner, false).await;
    w.groups.join(dave, "dave", closed).await.expect("request");
    w.groups
        .kick(Actor::User(owner), closed, &[dave])
        .await
        .expect("kick a request");
    w.groups.join(dave, "dave", closed).await.expect("request");
    w.groups
        .ban(Actor::User(owner), closed, &[dave])
        .await
        .expect("ban a request");
    assert!(w.delivered().is_empty());
    assert_eq!(w.removed(), Vec::<Uuid>::new());

    // Deleting a group closes its channel.
    w.groups
        .delete(Actor::User(owner), open)
        .await
        .expect("delete");
    assert_eq!(w.push.0.lock().closed, vec![channel]);
}
