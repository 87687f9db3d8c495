//! Session revocations: idempotent revoke, expiry filter, purge.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{Revocation, UserRevocation};

fn revocation(expires_at_ms: i64) -> Revocation {
    Revocation {
        session_id: Uuid::new_v4(),
        user_id: Uuid::new_v4(),
        expires_at_ms,
    }
}

fn sessions(list: &[Revocation]) -> BTreeSet<Uuid> {
    list.iter().map(|r| r.session_id).collect()
}

pub async fn revoke_twice_is_ok(f: &dyn Fixture) {
    let store = f.open().await;
    let r = revocation(NOW + 1_000);
    store
        .revoke_sessions(std::slice::from_ref(&r))
        .await
        .expect("revoke");
    store
        .revoke_sessions(&[r.clone(), r.clone()])
        .await
        .expect("revoke again");
    let active = store.active_revocations(NOW).await.expect("active");
    assert_eq!(active, vec![r]);
    store.revoke_sessions(&[]).await.expect("empty revoke");
    store.close().await;
}

pub async fn active_revocations_filter_by_expiry(f: &dyn Fixture) {
    let store = f.open().await;
    let past = revocation(NOW - 1);
    let boundary = revocation(NOW);
    let future = revocation(NOW + 1);
    let all = [past.clone(), boundary.clone(), future.clone()];
    store.revoke_sessions(&all).await.expect("revoke");
    let active = store.active_revocations(NOW).await.expect("active");
    assert_eq!(
        active,
        vec![future.clone()],
        "active means expires_at > now"
    );
    let earlier = store.active_revocations(NOW - 10).await.expect("active");
    assert_eq!(sessions(&earlier), sessions(&all));
    store.close().await;
}

pub async fn purge_removes_expired_revocations(f: &dyn Fixture) {
    let store = f.open().await;
    let expired = [revocation(NOW - 5), revocation(NOW)];
    let live = revocation(NOW + 5);
    store.revoke_sessions(&expired).await.expect("revoke");
    store
        .revoke_sessions(std::slice::from_ref(&live))
        .await
        .expect("revoke");
    assert_eq!(store.purge_revocations(NOW).await.expect("purge"), 2);
    assert_eq!(store.purge_revocations(NOW).await.expect("purge"), 0);
    let remaining = store.active_revocations(NOW - 100).await.expect("active");
    assert_eq!(remaining, vec![live]);
    store.close().await;
}

pub async fn user_revocation_keeps_the_later_values(f: &dyn Fixture) {
    let store = f.open().await;
    let user_id = Uuid::new_v4();
    let first = UserRevocation {
        user_id,
        issued_before_secs: 500,
        expires_at_ms: NOW + 5_000,
    };
    store
        .revoke_user_sessions(first.clone())
        .await
        .expect("revoke user");
    // An older logout-everywhere arriving late must not shorten the first one.
    store
        .revoke_user_sessions(UserRevocation {
            user_id,
            issued_before_secs: 400,
            expires_at_ms: NOW + 1_000,
        })
        .await
        .expect("revoke user again");
    assert_eq!(
        store.active_user_revocations(NOW).await.expect("active"),
        vec![first.clone()]
    );
    let later = UserRevocation {
        user_id,
        issued_before_secs: 600,
        expires_at_ms: NOW + 9_000,
    };
    store
        .revoke_user_sessions(later.clone())
        .await
        .expect("revoke user later");
    assert_eq!(
        store.active_user_revocations(NOW).await.expect("active"),
        vec![later]
    );
    store.close().await;
}

pub async fn purge_removes_expired_user_revocations(f: &dyn Fixture) {
    let store = f.open().await;
    let expired = UserRevocation {
        user_id: Uuid::new_v4(),
        issued_before_secs: 1,
        expires_at_ms: NOW,
    };
    let live = UserRevocation {
        user_id: Uuid::new_v4(),
        issued_before_secs: 1,
        expires_at_ms: NOW + 1,
    };
    store.revoke_user_sessions(expired).await.expect("revoke");
    store
        .revoke_user_sessions(live.clone())
        .await
        .expect("revoke");
    store
        .revoke_sessions(&[revocation(NOW - 1)])
        .await
        .expect("revoke session");
    assert_eq!(
        store.purge_revocations(NOW).await.expect("purge"),
        2,
        "one user-wide and one session revocation expired"
    );
    assert_eq!(
        store
            .active_user_revocations(NOW - 100)
            .await
            .expect("active"),
        vec![live]
    );
    store.close().await;
}
