//! The groups service over a real SQLite store, with a notifier that records.

use std::sync::Arc;

use metafi_proto::Code;
use metafi_storage::{GroupUpdate, NewIdentity, NewUser, group_state};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use uuid::Uuid;

use super::*;
use crate::{ManualClock, NewNotification, NobodyOnline, Notifier};

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<NewNotification>>);

#[async_trait]
impl Notifier for Recorder {
    async fn notify(&self, notifications: Vec<NewNotification>) -> Result<(), CoreError> {
        self.0.lock().extend(notifications);
        Ok(())
    }
}

struct World {
    groups: Groups,
    store: Arc<dyn Storage>,
    sent: Arc<Recorder>,
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
        let sent = Arc::new(Recorder::default());
        let groups = Groups::new(
            Arc::clone(&store),
            Arc::clone(&sent) as Arc<dyn Notifier>,
            Arc::new(NobodyOnline),
            Arc::new(ManualClock::new(1_700_000_000_000)),
        );
        World {
            groups,
            store,
            sent,
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

    async fn group(&self, owner: Uuid, name: &str, open: bool, max_count: i32) -> Uuid {
        let group = self
            .groups
            .create(
                owner,
                owner,
                CreateGroup {
                    name: name.to_owned(),
                    open,
                    max_count,
                    ..CreateGroup::default()
                },
            )
            .await
            .expect("create");
        Uuid::parse_str(&group.id).expect("id")
    }

    async fn state(&self, group: Uuid, user: Uuid) -> Option<i32> {
        self.store.member_state(group, user).await.expect("state")
    }

    async fn count(&self, group: Uuid) -> i32 {
        self.groups.by_id(&[group]).await.expect("group")[0].edge_count
    }

    fn sent(&self) -> Vec<NewNotification> {
        std::mem::take(&mut *self.sent.0.lock())
    }
}

fn says(result: Result<(), CoreError>, code: Code, message: &str) {
    match result {
        Err(e) => {
            assert_eq!(e.code(), code, "{e:?}");
            assert_eq!(e.client_message(), message);
        }
        Ok(()) => panic!("expected {message:?}"),
    }
}

#[tokio::test]
async fn create_validates_and_defaults_as_nakama() {
    let w = World::new();
    let owner = w.user("owner").await;
    let created = w
        .groups
        .create(
            owner,
            owner,
            CreateGroup {
                name: "G".into(),
                ..CreateGroup::default()
            },
        )
        .await
        .expect("create");
    assert_eq!(created.max_count, DEFAULT_MAX_COUNT);
    assert_eq!(created.edge_count, 1);
    assert_eq!(created.lang_tag, "en");
    assert_eq!(created.metadata, "{}");
    assert!(!created.open);
    let again = w
        .groups
        .create(
            owner,
            owner,
            CreateGroup {
                name: "G".into(),
                ..CreateGroup::default()
            },
        )
        .await;
    says(
        again.map(|_| ()),
        Code::AlreadyExists,
        "Group name is in use.",
    );
    let unnamed = w.groups.create(owner, owner, CreateGroup::default()).await;
    says(
        unnamed.map(|_| ()),
        Code::InvalidArgument,
        "Group name must be set.",
    );
    let negative = w
        .groups
        .create(
            owner,
            owner,
            CreateGroup {
                name: "H".into(),
                max_count: -1,
                ..CreateGroup::default()
            },
        )
        .await;
    says(
        negative.map(|_| ()),
        Code::InvalidArgument,
        "Group max count must be >= 1 when set.",
    );
}

#[tokio::test]
async fn update_and_delete_need_rank() {
    let w = World::new();
    let owner = w.user("owner").await;
    let member = w.user("member").await;
    let g = w.group(owner, "G", true, 10).await;
    w.groups.join(member, "member", g).await.expect("join");
    let change = || GroupUpdate {
        description: Some("d".into()),
        ..GroupUpdate::default()
    };
    says(
        w.groups.update(Actor::User(member), g, change()).await,
        Code::NotFound,
        "Group not found or you're not allowed to update.",
    );
    w.groups
        .update(Actor::User(owner), g, change())
        .await
        .expect("owner updates");
    says(
        w.groups
            .update(Actor::User(owner), g, GroupUpdate::default())
            .await,
        Code::InvalidArgument,
        "Specify at least one field to update.",
    );
    says(
        w.groups.delete(Actor::User(member), g).await,
        Code::InvalidArgument,
        "Group not found or you're not allowed to delete.",
    );
    // An admin may update but not delete.
    w.groups
        .promote(Actor::User(owner), g, &[member])
        .await
        .expect("promote");
    w.groups
        .update(Actor::User(member), g, change())
        .await
        .expect("admin updates");
    says(
        w.groups.delete(Actor::User(member), g).await,
        Code::InvalidArgument,
        "Group not found or you're not allowed to delete.",
    );
    w.groups
        .delete(Actor::User(owner), g)
        .await
        .expect("delete");
    assert!(w.groups.by_id(&[g]).await.expect("read").is_empty());
}

#[tokio::test]
async fn join_open_closed_full_and_banned() {
    let w = World::new();
    let owner = w.user("owner").await;
    let admin = w.user("admin").await;
    let a = w.user("a").await;
    let b = w.user("b").await;
    let c = w.user("c").await;
    let open = w.group(owner, "Open", true, 3).await;
    w.groups.join(a, "a", open).await.expect("join open");
    assert_eq!(w.state(open, a).await, Some(group_state::MEMBER));
    assert_eq!(w.count(open).await, 2);
    w.groups.join(a, "a", open).await.expect("join twice");
    assert_eq!(w.count(open).await, 2);
    w.groups.join(c, "c", open).await.expect("join open");
    // Nakama checks the count first: a full group refuses even its own members.
    says(
        w.groups.join(a, "a", open).await,
        Code::InvalidArgument,
        "Group is full.",
    );
    says(
        w.groups.join(b, "b", open).await,
        Code::InvalidArgument,
        "Group is full.",
    );
    says(
        w.groups.join(b, "b", Uuid::new_v4()).await,
        Code::NotFound,
        "Group not found.",
    );

    let closed = w.group(owner, "Closed", false, 10).await;
    w.groups
        .add(Actor::User(owner), closed, &[admin])
        .await
        .expect("add admin");
    w.groups
        .promote(Actor::User(owner), closed, &[admin])
        .await
        .expect("promote");
    w.sent();
    w.groups.join(b, "b", closed).await.expect("request");
    assert_eq!(w.state(closed, b).await, Some(group_state::JOIN_REQUEST));
    assert_eq!(w.count(closed).await, 2, "a request does not count");
    let sent = w.sent();
    let mut to: Vec<Uuid> = sent.iter().map(|n| n.user_id).collect();
    to.sort();
    let mut admins = vec![owner, admin];
    admins.sort();
    assert_eq!(to, admins, "superadmins and admins are told");
    assert!(sent.iter().all(|n| n.code == -5
        && n.subject == "User b wants to join your group"
        && n.sender_id == Some(b)
        && n.persistent));
    // Accepting the request: add makes it a member and notifies the user (-4).
    w.groups
        .add(Actor::User(admin), closed, &[b])
        .await
        .expect("accept");
    assert_eq!(w.state(closed, b).await, Some(group_state::MEMBER));
    let sent = w.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].code, -4);
    assert_eq!(sent[0].user_id, b);
    assert_eq!(sent[0].subject, "You've been added to group Closed");
    // A banned user joins nothing.
    w.groups
        .ban(Actor::User(owner), closed, &[b])
        .await
        .expect("ban");
    w.groups.join(b, "b", closed).await.expect("no-op");
    assert_eq!(w.state(closed, b).await, Some(group_state::BANNED));
    // Adding a banned user leaves the ban.
    w.groups
        .add(Actor::User(owner), closed, &[b])
        .await
        .expect("add banned");
    assert_eq!(w.state(closed, b).await, Some(group_state::BANNED));
}

#[tokio::test]
async fn member_cannot_manage_and_admin_cannot_touch_admins() {
    let w = World::new();
    let owner = w.user("owner").await;
    let admin = w.user("admin").await;
    let admin2 = w.user("admin2").await;
    let member = w.user("member").await;
    let other = w.user("other").await;
    let g = w.group(owner, "G", true, 10).await;
    for (id, name) in [(admin, "admin"), (admin2, "admin2"), (member, "member")] {
        w.groups.join(id, name, g).await.expect("join");
    }
    w.groups
        .promote(Actor::User(owner), g, &[admin, admin2])
        .await
        .expect("promote");
    for result in [
        w.groups.kick(Actor::User(member), g, &[admin]).await,
        w.groups.ban(Actor::User(member), g, &[admin]).await,
        w.groups.add(Actor::User(member), g, &[other]).await,
        w.groups.promote(Actor::User(member), g, &[member]).await,
        w.groups.demote(Actor::User(member), g, &[admin]).await,
        w.groups.kick(Actor::User(other), g, &[member]).await,
    ] {
        says(
            result,
            Code::NotFound,
            "Group not found or permission denied.",
        );
    }
    // An admin's kick, ban and promote skip admins and superadmins.
    w.groups
        .kick(Actor::User(admin), g, &[admin2, owner])
        .await
        .expect("kick");
    w.groups
        .ban(Actor::User(admin), g, &[admin2, owner])
        .await
        .expect("ban");
    w.groups
        .promote(Actor::User(admin), g, &[admin2])
        .await
        .expect("promote");
    assert_eq!(w.state(g, admin2).await, Some(group_state::ADMIN));
    assert_eq!(w.state(g, owner).await, Some(group_state::SUPERADMIN));
    // An admin demotes another admin, and kicks members.
    w.groups
        .demote(Actor::User(admin), g, &[admin2])
        .await
        .expect("demote");
    assert_eq!(w.state(g, admin2).await, Some(group_state::MEMBER));
    w.groups
        .kick(Actor::User(admin), g, &[admin2])
        .await
        .expect("kick member");
    assert_eq!(w.state(g, admin2).await, None);
    assert_eq!(w.count(g).await, 3);
    // An admin cannot demote a superadmin; a superadmin promotes an admin to superadmin.
    w.groups
        .demote(Actor::User(admin), g, &[owner])
        .await
        .expect("demote");
    assert_eq!(w.state(g, owner).await, Some(group_state::SUPERADMIN));
    w.groups
        .promote(Actor::User(owner), g, &[admin])
        .await
        .expect("promote");
    assert_eq!(w.state(g, admin).await, Some(group_state::SUPERADMIN));
    // Superadmins kick each other; never the caller itself.
    w.groups
        .kick(Actor::User(admin), g, &[owner, admin])
        .await
        .expect("kick superadmin");
    assert_eq!(w.state(g, owner).await, None);
    assert_eq!(w.state(g, admin).await, Some(group_state::SUPERADMIN));
}

#[tokio::test]
async fn leave_rules() {
    let w = World::new();
    let owner = w.user("owner").await;
    let member = w.user("member").await;
    let g = w.group(owner, "G", true, 10).await;
    w.groups.join(member, "member", g).await.expect("join");
    says(
        w.groups.leave(owner, g).await,
        Code::InvalidArgument,
        "Cannot leave group when you are the last superadmin.",
    );
    w.groups.leave(member, g).await.expect("member leaves");
    assert_eq!(w.count(g).await, 1);
    w.groups
        .leave(member, g)
        .await
        .expect("leaving twice is fine");
    // The last one out deletes the group.
    w.groups.leave(owner, g).await.expect("owner leaves");
    assert!(w.groups.by_id(&[g]).await.expect("read").is_empty());
    // A banned user's leave changes nothing.
    let h = w.group(owner, "H", true, 10).await;
    w.groups.join(member, "member", h).await.expect("join");
    w.groups
        .ban(Actor::User(owner), h, &[member])
        .await
        .expect("ban");
    w.groups.leave(member, h).await.expect("no-op");
    assert_eq!(w.state(h, member).await, Some(group_state::BANNED));
}

#[tokio::test]
async fn listings_validate_as_nakama() {
    let w = World::new();
    let owner = w.user("owner").await;
    let g = w.group(owner, "Alpha", true, 10).await;
    w.group(owner, "Beta", false, 10).await;
    let list = w
        .groups
        .list(ListGroups {
            name: "alp%".into(),
            limit: Some(10),
            ..ListGroups::default()
        })
        .await
        .expect("list");
    assert_eq!(list.groups.len(), 1);
    assert_eq!(list.groups[0].id, g.to_string());
    // The default page holds one group.
    let first = w.groups.list(ListGroups::default()).await.expect("list");
    assert_eq!(first.groups.len(), 1);
    assert!(!first.cursor.is_empty());
    let combined = w
        .groups
        .list(ListGroups {
            name: "a%".into(),
            open: Some(true),
            ..ListGroups::default()
        })
        .await;
    says(
        combined.map(|_| ()),
        Code::InvalidArgument,
        "name filter cannot be combined with any other filter",
    );
    let bad = w
        .groups
        .list(ListGroups {
            limit: Some(101),
            ..ListGroups::default()
        })
        .await;
    says(
        bad.map(|_| ()),
        Code::InvalidArgument,
        "Invalid limit - limit must be between 1 and 100.",
    );
    says(
        w.groups.users(g, Some(5), None, "").await.map(|_| ()),
        Code::InvalidArgument,
        "Invalid state - state must be between 0 and 4.",
    );
    says(
        w.groups.users(g, None, None, "zzz").await.map(|_| ()),
        Code::InvalidArgument,
        "Cursor is invalid.",
    );
    let users = w.groups.users(g, None, None, "").await.expect("users");
    assert_eq!(users.group_users.len(), 1);
    assert_eq!(users.group_users[0].state, group_state::SUPERADMIN);
    assert_eq!(users.group_users[0].user.username, "owner");
    let mine = w
        .groups
        .user_groups(owner, None, None, "")
        .await
        .expect("mine");
    assert_eq!(mine.user_groups.len(), 2);
    assert!(w.groups.may_chat(g, owner).await.expect("chat"));
    let stranger = w.user("stranger").await;
    assert!(!w.groups.may_chat(g, stranger).await.expect("chat"));
}
