//! Groups: creation and name conflicts, updates, every membership transition with its count,
//! the max_count race, the last superadmin, listings and paging, user deletion.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::group::state::{ADMIN, BANNED, JOIN_REQUEST, MEMBER, SUPERADMIN};
use crate::{
    Conflict, Group, GroupFilter, GroupUpdate, MemberChange, MembershipOutcome, MembershipRefusal,
    NewGroup, Storage, StorageError,
};

async fn user(store: &dyn Storage, name: &str) -> Uuid {
    let new = new_user(name, device(&format!("device-{name}")));
    let id = new.id;
    store.create_user(new).await.expect("create user");
    id
}

fn new_group(name: &str, owner: Uuid, open: bool, max_count: i32) -> NewGroup {
    NewGroup {
        id: Uuid::new_v4(),
        creator_id: owner,
        superadmin_id: owner,
        name: name.to_owned(),
        description: "about".to_owned(),
        avatar_url: String::new(),
        lang_tag: "en".to_owned(),
        metadata: "{}".to_owned(),
        open,
        max_count,
        now_ms: NOW,
    }
}

fn to(user_id: Uuid, from: Option<i32>, to: Option<i32>) -> MemberChange {
    MemberChange { user_id, from, to }
}

async fn group(store: &dyn Storage, id: Uuid) -> Group {
    store
        .groups_by_id(&[id])
        .await
        .expect("read")
        .pop()
        .expect("group exists")
}

async fn state(store: &dyn Storage, group: Uuid, user: Uuid) -> Option<i32> {
    store.member_state(group, user).await.expect("state")
}

fn applied(outcome: MembershipOutcome) -> Vec<bool> {
    match outcome {
        MembershipOutcome::Applied(flags) => flags,
        other => panic!("expected applied, got {other:?}"),
    }
}

pub async fn group_create_and_name_conflict(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let created = store
        .create_group(new_group("Knights", owner, true, 10))
        .await
        .expect("create");
    assert_eq!(created.edge_count, 1);
    assert_eq!(created.name, "Knights");
    assert!(created.open);
    assert_eq!(state(&*store, created.id, owner).await, Some(SUPERADMIN));
    assert_eq!(group(&*store, created.id).await, created);
    match store
        .create_group(new_group("Knights", owner, false, 10))
        .await
    {
        Err(StorageError::Conflict {
            what: Conflict::GroupName,
        }) => {}
        other => panic!("expected a name conflict, got {other:?}"),
    }
    // Names are case-sensitive, as Nakama's unique constraint.
    store
        .create_group(new_group("knights", owner, false, 10))
        .await
        .expect("other case");
}

pub async fn group_update_fields_conflict_and_missing(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let a = store
        .create_group(new_group("A", owner, true, 10))
        .await
        .expect("a");
    store
        .create_group(new_group("B", owner, true, 10))
        .await
        .expect("b");
    let update = GroupUpdate {
        description: Some("new".into()),
        open: Some(false),
        max_count: Some(5),
        metadata: Some("{\"k\":1}".into()),
        ..GroupUpdate::default()
    };
    store
        .update_group(a.id, update, NOW + 5)
        .await
        .expect("update");
    let read = group(&*store, a.id).await;
    assert_eq!(read.description, "new");
    assert!(!read.open);
    assert_eq!(read.max_count, 5);
    assert_eq!(read.metadata, "{\"k\":1}");
    assert_eq!(read.name, "A");
    assert_eq!(read.update_time_ms, NOW + 5);
    let rename = GroupUpdate {
        name: Some("B".into()),
        ..GroupUpdate::default()
    };
    assert!(matches!(
        store.update_group(a.id, rename, NOW).await,
        Err(StorageError::Conflict {
            what: Conflict::GroupName
        })
    ));
    let missing = GroupUpdate {
        description: Some("x".into()),
        ..GroupUpdate::default()
    };
    assert!(matches!(
        store.update_group(Uuid::new_v4(), missing, NOW).await,
        Err(StorageError::NotFound { .. })
    ));
}

pub async fn group_membership_transitions_keep_the_count(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let u = user(&*store, "u").await;
    let g = store
        .create_group(new_group("G", owner, false, 10))
        .await
        .expect("create")
        .id;
    let steps: [(Option<i32>, Option<i32>, i32); 7] = [
        (None, Some(JOIN_REQUEST), 1),
        (Some(JOIN_REQUEST), Some(MEMBER), 2),
        (Some(MEMBER), Some(ADMIN), 2),
        (Some(ADMIN), Some(SUPERADMIN), 2),
        (Some(SUPERADMIN), Some(MEMBER), 2),
        (Some(MEMBER), Some(BANNED), 1),
        (Some(BANNED), None, 1),
    ];
    for (from, next, count) in steps {
        let flags = applied(
            store
                .change_members(g, vec![to(u, from, next)], NOW)
                .await
                .expect("change"),
        );
        assert_eq!(flags, [true], "{from:?} -> {next:?}");
        assert_eq!(state(&*store, g, u).await, next);
        assert_eq!(
            group(&*store, g).await.edge_count,
            count,
            "{from:?} -> {next:?}"
        );
    }
    // A stale `from` is skipped and writes nothing.
    let flags = applied(
        store
            .change_members(g, vec![to(u, Some(MEMBER), None)], NOW)
            .await
            .expect("change"),
    );
    assert_eq!(flags, [false]);
    // A missing group refuses the batch.
    assert_eq!(
        store
            .change_members(Uuid::new_v4(), vec![to(u, None, Some(MEMBER))], NOW)
            .await
            .expect("change"),
        MembershipOutcome::Refused(MembershipRefusal::GroupNotFound)
    );
}

pub async fn group_last_superadmin_is_kept(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let other = user(&*store, "other").await;
    let g = store
        .create_group(new_group("G", owner, true, 10))
        .await
        .expect("create")
        .id;
    let flags = applied(
        store
            .change_members(g, vec![to(owner, Some(SUPERADMIN), None)], NOW)
            .await
            .expect("change"),
    );
    assert_eq!(flags, [false]);
    assert_eq!(state(&*store, g, owner).await, Some(SUPERADMIN));
    // With a second superadmin, the first may go; then the second is the last one.
    let flags = applied(
        store
            .change_members(
                g,
                vec![
                    to(other, None, Some(SUPERADMIN)),
                    to(owner, Some(SUPERADMIN), Some(ADMIN)),
                    to(other, Some(SUPERADMIN), Some(ADMIN)),
                ],
                NOW,
            )
            .await
            .expect("change"),
    );
    assert_eq!(flags, [true, true, false]);
    assert_eq!(state(&*store, g, other).await, Some(SUPERADMIN));
    assert_eq!(group(&*store, g).await.edge_count, 2);
}

pub async fn group_full_refuses_the_whole_batch(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let a = user(&*store, "a").await;
    let b = user(&*store, "b").await;
    let g = store
        .create_group(new_group("G", owner, true, 2))
        .await
        .expect("create")
        .id;
    assert_eq!(
        store
            .change_members(
                g,
                vec![to(a, None, Some(MEMBER)), to(b, None, Some(MEMBER))],
                NOW
            )
            .await
            .expect("change"),
        MembershipOutcome::Refused(MembershipRefusal::GroupFull)
    );
    assert_eq!(state(&*store, g, a).await, None, "nothing written");
    assert_eq!(group(&*store, g).await.edge_count, 1);
    // Join requests do not count towards the cap.
    let flags = applied(
        store
            .change_members(
                g,
                vec![to(a, None, Some(MEMBER)), to(b, None, Some(JOIN_REQUEST))],
                NOW,
            )
            .await
            .expect("change"),
    );
    assert_eq!(flags, [true, true]);
    assert_eq!(group(&*store, g).await.edge_count, 2);
}

pub async fn group_concurrent_joins_never_exceed_max_count(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let g = store
        .create_group(new_group("G", owner, true, 5))
        .await
        .expect("create")
        .id;
    let mut users = Vec::new();
    for n in 0..20 {
        users.push(user(&*store, &format!("joiner{n}")).await);
    }
    let joins = users.iter().map(|&u| {
        let store: Arc<dyn Storage> = Arc::clone(&store);
        tokio::spawn(async move {
            store
                .change_members(g, vec![to(u, None, Some(MEMBER))], NOW)
                .await
                .expect("join")
        })
    });
    let mut joined = 0;
    let mut full = 0;
    for join in futures_util::future::join_all(joins).await {
        match join.expect("task") {
            MembershipOutcome::Applied(flags) if flags == [true] => joined += 1,
            MembershipOutcome::Refused(MembershipRefusal::GroupFull) => full += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((joined, full), (4, 16));
    assert_eq!(group(&*store, g).await.edge_count, 5);
    let page = store
        .list_group_members(g, None, 100, None)
        .await
        .expect("list");
    assert_eq!(page.members.len(), 5);
}

pub async fn group_members_and_user_groups_page_in_state_order(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let g = store
        .create_group(new_group("G", owner, false, 100))
        .await
        .expect("create")
        .id;
    let mut users = Vec::new();
    for n in 0..7 {
        users.push(user(&*store, &format!("u{n}")).await);
    }
    // Three members, two join requests, one banned (hidden without a state filter), one admin.
    let states = [
        MEMBER,
        JOIN_REQUEST,
        MEMBER,
        BANNED,
        JOIN_REQUEST,
        ADMIN,
        MEMBER,
    ];
    for (n, (&u, &s)) in users.iter().zip(&states).enumerate() {
        store
            .change_members(g, vec![to(u, None, Some(s))], NOW + n as i64)
            .await
            .expect("add");
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .list_group_members(g, None, 2, cursor.as_deref())
            .await
            .expect("page");
        assert!(page.members.len() <= 2);
        seen.extend(page.members.iter().map(|m| (m.state, m.user.id)));
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let order: Vec<i32> = seen.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        order,
        [
            SUPERADMIN,
            ADMIN,
            MEMBER,
            MEMBER,
            MEMBER,
            JOIN_REQUEST,
            JOIN_REQUEST
        ]
    );
    // Within a state, by when the user got it.
    let members: Vec<Uuid> = seen
        .iter()
        .filter(|(s, _)| *s == MEMBER)
        .map(|(_, u)| *u)
        .collect();
    assert_eq!(members, [users[0], users[2], users[6]]);
    let banned = store
        .list_group_members(g, Some(BANNED), 10, None)
        .await
        .expect("banned");
    assert_eq!(banned.members.len(), 1);
    assert_eq!(banned.members[0].user.id, users[3]);
    // A cursor made under another state filter is refused.
    let page = store
        .list_group_members(g, Some(MEMBER), 1, None)
        .await
        .expect("members");
    let cursor = page.cursor.expect("more members");
    assert!(matches!(
        store
            .list_group_members(g, Some(JOIN_REQUEST), 1, Some(&cursor))
            .await,
        Err(StorageError::Invalid { .. })
    ));
    assert!(matches!(
        store.list_group_members(g, None, 1, Some("garbage")).await,
        Err(StorageError::Invalid { .. })
    ));
    // A user's groups.
    let h = store
        .create_group(new_group("H", users[0], true, 100))
        .await
        .expect("create h")
        .id;
    let page = store
        .list_user_groups(users[0], None, 10, None)
        .await
        .expect("user groups");
    let got: Vec<(Uuid, i32)> = page.groups.iter().map(|g| (g.group.id, g.state)).collect();
    assert_eq!(got, [(h, SUPERADMIN), (g, MEMBER)]);
    assert!(page.cursor.is_none());
    let ids = store
        .member_ids_in_states(g, &[SUPERADMIN, ADMIN])
        .await
        .expect("ids");
    assert_eq!(ids, [owner, users[5]]);
}

pub async fn group_list_filters_and_pages(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let mut new = new_group(&format!("Clan{n}"), owner, n % 2 == 0, 10);
        new.lang_tag = if n < 3 { "en" } else { "fr" }.to_owned();
        new.now_ms = NOW + n;
        ids.push(store.create_group(new).await.expect("create").id);
    }
    let mut other = new_group("Other", owner, true, 10);
    other.now_ms = NOW + 100;
    let other = store.create_group(other).await.expect("other").id;
    // No filter: every group, by update time, paged without gaps.
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .list_groups(&GroupFilter::default(), 2, cursor.as_deref())
            .await
            .expect("page");
        all.extend(page.groups.iter().map(|g| g.id));
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(all.len(), 6);
    assert_eq!(all[..5], ids[..]);
    // Name prefix, case-insensitive.
    let by_name = GroupFilter {
        name: Some("clan%".into()),
        ..GroupFilter::default()
    };
    let page = store.list_groups(&by_name, 3, None).await.expect("name");
    let names: Vec<&str> = page.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["Clan0", "Clan1", "Clan2"]);
    let rest = store
        .list_groups(&by_name, 3, page.cursor.as_deref())
        .await
        .expect("name page 2");
    assert_eq!(rest.groups.len(), 2);
    assert!(rest.cursor.is_none());
    // Lang tag and open together.
    let filter = GroupFilter {
        lang_tag: Some("en".into()),
        open: Some(true),
        ..GroupFilter::default()
    };
    let page = store.list_groups(&filter, 10, None).await.expect("filter");
    let got: Vec<Uuid> = page.groups.iter().map(|g| g.id).collect();
    assert_eq!(got, [ids[0], ids[2], other]);
    // Members at most.
    let filter = GroupFilter {
        max_members: Some(0),
        ..GroupFilter::default()
    };
    assert!(
        store
            .list_groups(&filter, 10, None)
            .await
            .expect("members")
            .groups
            .is_empty()
    );
    assert!(matches!(
        store
            .list_groups(&GroupFilter::default(), 10, Some("!!"))
            .await,
        Err(StorageError::Invalid { .. })
    ));
    // Random groups: distinct, at most what exists.
    let random = store.random_groups(10).await.expect("random");
    assert_eq!(random.len(), 6);
    let random = store.random_groups(3).await.expect("random");
    assert_eq!(random.len(), 3);
}

pub async fn group_delete_removes_memberships(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let g = store
        .create_group(new_group("G", owner, true, 10))
        .await
        .expect("create")
        .id;
    assert!(store.delete_group(g).await.expect("delete"));
    assert!(!store.delete_group(g).await.expect("delete again"));
    assert!(store.groups_by_id(&[g]).await.expect("read").is_empty());
    assert_eq!(state(&*store, g, owner).await, None);
    assert!(
        store
            .list_user_groups(owner, None, 10, None)
            .await
            .expect("list")
            .groups
            .is_empty()
    );
}

pub async fn group_user_deletion_follows_nakama(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = user(&*store, "owner").await;
    let member = user(&*store, "member").await;
    let co = user(&*store, "co").await;
    // Only superadmin: the group goes, though it has another member.
    let solo = store
        .create_group(new_group("Solo", owner, true, 10))
        .await
        .expect("solo")
        .id;
    store
        .change_members(solo, vec![to(member, None, Some(MEMBER))], NOW)
        .await
        .expect("join");
    // Shared superadmins: the group stays, one member less.
    let shared = store
        .create_group(new_group("Shared", co, true, 10))
        .await
        .expect("shared")
        .id;
    store
        .change_members(
            shared,
            vec![
                to(owner, None, Some(SUPERADMIN)),
                to(member, None, Some(MEMBER)),
            ],
            NOW,
        )
        .await
        .expect("join");
    assert_eq!(group(&*store, shared).await.edge_count, 3);
    assert!(store.delete_user(owner).await.expect("delete"));
    assert!(store.groups_by_id(&[solo]).await.expect("read").is_empty());
    assert_eq!(state(&*store, solo, member).await, None);
    let left = group(&*store, shared).await;
    assert_eq!(left.edge_count, 2);
    assert_eq!(state(&*store, shared, owner).await, None);
    // Deleting a plain member counts it out too.
    assert!(store.delete_user(member).await.expect("delete member"));
    assert_eq!(group(&*store, shared).await.edge_count, 1);
}
