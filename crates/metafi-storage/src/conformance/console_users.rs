//! Console user management: listing, deletion and role changes that always keep an admin (also
//! when two admins remove each other at once), MFA state with its "outdated setup" guard,
//! recovery codes used once, and sign-outs kept until they expire.

use std::sync::Arc;

use futures_util::future::join;

use super::{Fixture, NOW};
use crate::{ConsoleMfaUpdate, ConsoleUser, ConsoleUserChange};

fn user(name: &str, email: &str, role: u8) -> ConsoleUser {
    ConsoleUser {
        id: format!("id-{name}"),
        username: name.to_owned(),
        email: email.to_owned(),
        password_hash: format!("hash-{name}"),
        role,
        session_key: format!("key-{name}"),
        create_time_ms: NOW,
        update_time_ms: NOW,
        ..ConsoleUser::default()
    }
}

pub async fn console_users_are_managed_and_an_admin_is_kept(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    for u in [
        user("bob", "bob@example.com", 1),
        user("alice", "alice@example.com", 1),
        user("carol", "", 2),
        user("dave", "", 4),
    ] {
        assert!(store.seed_console_user(u).await.expect("store"));
    }
    // The email is unique among users that have one; the name too.
    assert!(
        !store
            .seed_console_user(user("eve", "bob@example.com", 2))
            .await
            .expect("store")
    );
    assert!(
        !store
            .seed_console_user(user("carol", "", 3))
            .await
            .expect("store")
    );
    let listed = store.console_users().await.expect("store");
    let names: Vec<&str> = listed.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names, ["alice", "bob", "carol", "dave"]);
    assert_eq!(listed[0], user("alice", "alice@example.com", 1));

    assert_eq!(
        store.delete_console_user("carol").await.expect("store"),
        ConsoleUserChange::Done
    );
    assert_eq!(
        store.delete_console_user("carol").await.expect("store"),
        ConsoleUserChange::NotFound
    );
    assert_eq!(
        store
            .set_console_user_role("nobody", 2, "k".into(), NOW)
            .await
            .expect("store"),
        ConsoleUserChange::NotFound
    );
    // Demote bob: alice is the last admin and can be neither demoted nor deleted.
    assert_eq!(
        store
            .set_console_user_role("bob", 3, "key-bob-2".into(), NOW + 5)
            .await
            .expect("store"),
        ConsoleUserChange::Done
    );
    let bob = store
        .console_user("bob")
        .await
        .expect("store")
        .expect("bob");
    assert_eq!(
        (bob.role, bob.session_key.as_str(), bob.update_time_ms),
        (3, "key-bob-2", NOW + 5)
    );
    assert_eq!(
        store
            .set_console_user_role("alice", 2, "k".into(), NOW)
            .await
            .expect("store"),
        ConsoleUserChange::LastAdmin
    );
    assert_eq!(
        store.delete_console_user("alice").await.expect("store"),
        ConsoleUserChange::LastAdmin
    );
    // An admin may be made admin again (no change of the count), and non-admins deleted.
    assert_eq!(
        store
            .set_console_user_role("alice", 1, "k2".into(), NOW)
            .await
            .expect("store"),
        ConsoleUserChange::Done
    );
    assert_eq!(
        store.delete_console_user("dave").await.expect("store"),
        ConsoleUserChange::Done
    );
    let alice = store
        .console_user("alice")
        .await
        .expect("store")
        .expect("alice");
    assert_eq!((alice.role, alice.session_key.as_str()), (1, "k2"));
}

pub async fn console_admins_removing_each_other_at_once_keep_one(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    let mut survivor: Option<String> = None;
    for round in 0..8 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        for name in [&a, &b] {
            assert!(
                store
                    .seed_console_user(user(name, "", 1))
                    .await
                    .expect("store")
            );
        }
        // Only this round's two admins are left before they race.
        if let Some(previous) = survivor.take() {
            assert_eq!(
                store.delete_console_user(&previous).await.expect("store"),
                ConsoleUserChange::Done
            );
        }
        let (one, other) = (Arc::clone(&store), Arc::clone(&store));
        let (b2, a2) = (b.clone(), a.clone());
        // Even rounds delete each other, odd rounds demote each other.
        let (first, second) = if round % 2 == 0 {
            join(
                async move { one.delete_console_user(&b2).await },
                async move { other.delete_console_user(&a2).await },
            )
            .await
        } else {
            join(
                async move { one.set_console_user_role(&b2, 4, "x".into(), NOW).await },
                async move { other.set_console_user_role(&a2, 4, "y".into(), NOW).await },
            )
            .await
        };
        let mut outcomes = [first.expect("store"), second.expect("store")];
        outcomes.sort_by_key(|o| *o == ConsoleUserChange::LastAdmin);
        assert_eq!(
            outcomes,
            [ConsoleUserChange::Done, ConsoleUserChange::LastAdmin],
            "round {round}"
        );
        let admins: Vec<String> = store
            .console_users()
            .await
            .expect("store")
            .into_iter()
            .filter(|u| u.role == 1)
            .map(|u| u.username)
            .collect();
        assert_eq!(admins.len(), 1, "round {round}: {admins:?}");
        survivor = admins.into_iter().next();
    }
}

pub async fn console_mfa_setup_reset_and_recovery_codes(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    assert!(
        store
            .seed_console_user(user("ops", "", 1))
            .await
            .expect("store")
    );
    let set = |secret: Option<&[u8]>, codes: Option<&[u8]>, before: Option<i64>, now: i64| {
        ConsoleMfaUpdate {
            secret: secret.map(<[u8]>::to_vec),
            recovery_codes: codes.map(<[u8]>::to_vec),
            not_updated_after_ms: before,
            now_ms: now,
        }
    };
    // A setup token made before the user's last update is outdated.
    assert!(
        !store
            .set_console_user_mfa("ops", set(Some(b"s"), Some(b"c1"), Some(NOW - 1), NOW + 1))
            .await
            .expect("store")
    );
    assert!(
        !store
            .set_console_user_mfa("nobody", set(Some(b"s"), Some(b"c1"), None, NOW + 1))
            .await
            .expect("store")
    );
    assert!(
        store
            .set_console_user_mfa("ops", set(Some(b"s"), Some(b"c1"), Some(NOW), NOW + 10))
            .await
            .expect("store")
    );
    let ops = store
        .console_user("ops")
        .await
        .expect("store")
        .expect("ops");
    assert_eq!(ops.mfa_secret.as_deref(), Some(&b"s"[..]));
    assert_eq!(ops.mfa_recovery_codes.as_deref(), Some(&b"c1"[..]));
    assert_eq!(ops.update_time_ms, NOW + 10);
    // Recovery codes are replaced only from what was read: the second of two racing uses fails.
    assert!(
        store
            .replace_console_recovery_codes("ops", b"c1".to_vec(), b"c2".to_vec())
            .await
            .expect("store")
    );
    assert!(
        !store
            .replace_console_recovery_codes("ops", b"c1".to_vec(), b"c3".to_vec())
            .await
            .expect("store")
    );
    assert!(
        store
            .set_console_user_mfa_required("ops", true, NOW + 11)
            .await
            .expect("store")
    );
    assert!(
        !store
            .set_console_user_mfa_required("nobody", true, NOW)
            .await
            .expect("store")
    );
    assert!(
        store
            .set_console_user_mfa("ops", set(None, None, None, NOW + 12))
            .await
            .expect("store")
    );
    let ops = store
        .console_user("ops")
        .await
        .expect("store")
        .expect("ops");
    assert_eq!(
        (ops.mfa_secret, ops.mfa_recovery_codes, ops.mfa_required),
        (None, None, true)
    );
}

pub async fn console_sign_outs_are_kept_until_they_expire(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    assert!(!store.console_session_revoked("s1").await.expect("store"));
    store
        .revoke_console_session("s1", NOW + 100, NOW)
        .await
        .expect("store");
    store
        .revoke_console_session("s1", NOW + 100, NOW)
        .await
        .expect("twice is fine");
    // Already expired: nothing to keep.
    store
        .revoke_console_session("s0", NOW, NOW)
        .await
        .expect("store");
    assert!(store.console_session_revoked("s1").await.expect("store"));
    assert!(!store.console_session_revoked("s0").await.expect("store"));
    // A later sign-out purges the ones that have expired.
    store
        .revoke_console_session("s2", NOW + 300, NOW + 100)
        .await
        .expect("store");
    assert!(!store.console_session_revoked("s1").await.expect("store"));
    assert!(store.console_session_revoked("s2").await.expect("store"));
}
