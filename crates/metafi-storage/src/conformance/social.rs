//! Social sign-in identities: creation with a provider id, lookups, links and unlinks that
//! never leave an account without a way to sign in.

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{Conflict, NewSocialUser, Provider, SocialProfile, StorageError, Unlink};

fn social_user(username: &str, provider: Provider, provider_id: &str) -> NewSocialUser {
    NewSocialUser {
        id: Uuid::new_v4(),
        username: username.to_owned(),
        provider,
        provider_id: provider_id.to_owned(),
        display_name: String::new(),
        avatar_url: String::new(),
        email: None,
        now_ms: NOW,
    }
}

fn conflict_of(result: Result<(), StorageError>) -> Conflict {
    match result {
        Err(StorageError::Conflict { what }) => what,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

pub async fn social_create_find_and_conflicts(f: &dyn Fixture) {
    let store = f.open().await;
    let mut ann = social_user("ann", Provider::Google, "g-ann");
    ann.display_name = "Ann G".into();
    ann.avatar_url = "https://example.com/ann.png".into();
    ann.email = Some("ann@example.com".into());
    store.create_social_user(ann.clone()).await.expect("create");

    let found = store
        .find_social_user(Provider::Google, "g-ann")
        .await
        .expect("find")
        .expect("found");
    assert_eq!((found.id, found.username.as_str()), (ann.id, "ann"));
    assert!(!found.disabled);
    // The id is the Google one only.
    assert!(
        store
            .find_social_user(Provider::Steam, "g-ann")
            .await
            .expect("find")
            .is_none()
    );
    let account = store.account(ann.id).await.expect("read").expect("exists");
    assert_eq!(account.user.social.google_id.as_deref(), Some("g-ann"));
    assert_eq!(account.user.social.steam_id, None);
    assert_eq!(account.user.display_name, "Ann G");
    assert_eq!(account.user.avatar_url, "https://example.com/ann.png");
    assert_eq!(account.user.email.as_deref(), Some("ann@example.com"));

    // The same provider id again, even with a free username: the id's conflict.
    let again = social_user("ann2", Provider::Google, "g-ann");
    assert_eq!(
        conflict_of(store.create_social_user(again.clone()).await),
        Conflict::SocialId
    );
    assert!(store.account(again.id).await.expect("read").is_none());
    // Both taken: the id's conflict wins.
    let both = social_user("ann", Provider::Google, "g-ann");
    assert_eq!(
        conflict_of(store.create_social_user(both).await),
        Conflict::SocialId
    );
    let taken_name = social_user("ann", Provider::Steam, "76561197960287930");
    assert_eq!(
        conflict_of(store.create_social_user(taken_name.clone()).await),
        Conflict::Username
    );
    assert!(store.account(taken_name.id).await.expect("read").is_none());

    // Another user with the same provider email: created, the email is not imported.
    let mut bob = social_user("bob", Provider::Apple, "apple-bob");
    bob.email = Some("ann@example.com".into());
    store.create_social_user(bob.clone()).await.expect("create");
    let bob_account = store.account(bob.id).await.expect("read").expect("exists");
    assert_eq!(bob_account.user.email, None);
    assert_eq!(
        bob_account.user.social.apple_id.as_deref(),
        Some("apple-bob")
    );
    // Each provider has its own column.
    for (i, provider) in Provider::ALL.into_iter().enumerate() {
        let new = social_user(&format!("p{i}"), provider, "same-id");
        store.create_social_user(new.clone()).await.expect("create");
        let found = store
            .find_social_user(provider, "same-id")
            .await
            .expect("find")
            .expect("found");
        assert_eq!(found.id, new.id);
    }
    assert!(matches!(
        store.find_social_user(Provider::Google, "bad\0id").await,
        Err(StorageError::NulCharacter { .. })
    ));
}

pub async fn social_link_conflicts_and_profile(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("ann", device("device-ann"));
    let b = new_user("bob", device("device-bob"));
    store.create_user(a.clone()).await.expect("create");
    store.create_user(b.clone()).await.expect("create");
    let profile = SocialProfile {
        display_name: "Ann G".into(),
        avatar_url: "https://example.com/a.png".into(),
        email: Some("ann@example.com".into()),
    };
    store
        .link_social(a.id, Provider::Google, "g-ann", profile.clone(), NOW + 1)
        .await
        .expect("link");
    // Relinking one's own id is fine; another user's is a conflict; an unknown user NotFound.
    store
        .link_social(
            a.id,
            Provider::Google,
            "g-ann",
            SocialProfile::default(),
            NOW + 2,
        )
        .await
        .expect("relink");
    assert_eq!(
        conflict_of(
            store
                .link_social(b.id, Provider::Google, "g-ann", profile.clone(), NOW)
                .await
        ),
        Conflict::SocialId
    );
    assert!(matches!(
        store
            .link_social(
                Uuid::new_v4(),
                Provider::Steam,
                "s-zed",
                profile.clone(),
                NOW
            )
            .await,
        Err(StorageError::NotFound { .. })
    ));
    let account = store.account(a.id).await.expect("read").expect("exists");
    assert_eq!(account.user.social.google_id.as_deref(), Some("g-ann"));
    assert_eq!(account.user.display_name, "Ann G");
    assert_eq!(account.user.email.as_deref(), Some("ann@example.com"));
    assert_eq!(account.user.update_time_ms, NOW + 2);
    // Fields the user already has are kept; a taken email is not imported.
    let other = SocialProfile {
        display_name: "Other".into(),
        avatar_url: "https://example.com/o.png".into(),
        email: Some("ann@example.com".into()),
    };
    store
        .link_social(b.id, Provider::Steam, "s-bob", other.clone(), NOW + 3)
        .await
        .expect("link");
    store
        .link_social(a.id, Provider::Facebook, "fb-ann", other, NOW + 4)
        .await
        .expect("link");
    let ann = store.account(a.id).await.expect("read").expect("exists");
    assert_eq!(ann.user.display_name, "Ann G");
    assert_eq!(ann.user.avatar_url, "https://example.com/a.png");
    let bob = store.account(b.id).await.expect("read").expect("exists");
    assert_eq!(bob.user.display_name, "Other");
    assert_eq!(bob.user.email, None);
    // Found by either id.
    for (provider, id) in [(Provider::Google, "g-ann"), (Provider::Facebook, "fb-ann")] {
        let found = store.find_social_user(provider, id).await.expect("find");
        assert_eq!(found.map(|u| u.id), Some(a.id));
    }

    // fill_social_profile fills only empty fields.
    let c = new_user("cat", device("device-cat"));
    store.create_user(c.clone()).await.expect("create");
    store
        .fill_social_profile(
            c.id,
            SocialProfile {
                display_name: "Cat".into(),
                avatar_url: String::new(),
                email: None,
            },
            NOW + 5,
        )
        .await
        .expect("fill");
    store
        .fill_social_profile(
            c.id,
            SocialProfile {
                display_name: "Not Cat".into(),
                avatar_url: "https://example.com/c.png".into(),
                email: None,
            },
            NOW + 6,
        )
        .await
        .expect("fill");
    let cat = store.account(c.id).await.expect("read").expect("exists");
    assert_eq!(cat.user.display_name, "Cat");
    assert_eq!(cat.user.avatar_url, "https://example.com/c.png");
    assert_eq!(cat.user.update_time_ms, NOW + 6);
}

pub async fn social_unlink_keeps_a_way_to_sign_in(f: &dyn Fixture) {
    let store = f.open().await;
    let ann = social_user("ann", Provider::Steam, "s-ann");
    store.create_social_user(ann.clone()).await.expect("create");
    // The only identity: neither it nor (absent) others can go.
    assert!(
        !store
            .unlink_social(ann.id, Provider::Steam, None, NOW + 1)
            .await
            .expect("unlink")
    );
    store.link_device(ann.id, "device-ann").await.expect("link");
    // A different id than the user's: nothing changes.
    assert!(
        !store
            .unlink_social(ann.id, Provider::Steam, Some("s-other"), NOW + 2)
            .await
            .expect("unlink")
    );
    // A social id is an identity: the device may go while it remains.
    assert!(
        store
            .unlink(ann.id, Unlink::Device("device-ann"), NOW + 3)
            .await
            .expect("unlink device")
    );
    store
        .link_custom(ann.id, "custom-ann", NOW + 4)
        .await
        .expect("link custom");
    assert!(
        store
            .unlink(ann.id, Unlink::Custom(None), NOW + 5)
            .await
            .expect("unlink custom")
    );
    store
        .link_email(ann.id, "ann@example.com", "hash", NOW + 6)
        .await
        .expect("link email");
    assert!(
        store
            .unlink(ann.id, Unlink::Email(None), NOW + 7)
            .await
            .expect("unlink email")
    );
    // Two social ids: one may go, then the other is the last.
    store
        .link_social(
            ann.id,
            Provider::Apple,
            "apple-ann",
            SocialProfile::default(),
            NOW + 8,
        )
        .await
        .expect("link");
    assert!(
        store
            .unlink_social(ann.id, Provider::Steam, Some("s-ann"), NOW + 9)
            .await
            .expect("unlink")
    );
    let account = store.account(ann.id).await.expect("read").expect("exists");
    assert_eq!(account.user.social.steam_id, None);
    assert_eq!(account.user.update_time_ms, NOW + 9);
    assert!(
        store
            .find_social_user(Provider::Steam, "s-ann")
            .await
            .expect("find")
            .is_none()
    );
    assert!(
        !store
            .unlink_social(ann.id, Provider::Apple, None, NOW + 10)
            .await
            .expect("unlink")
    );
    // As Nakama: a provider the user does not have "unlinks" while another identity remains.
    assert!(
        store
            .unlink_social(ann.id, Provider::Google, None, NOW + 11)
            .await
            .expect("unlink")
    );
    // Unknown user.
    assert!(
        !store
            .unlink_social(Uuid::new_v4(), Provider::Apple, None, NOW)
            .await
            .expect("unlink")
    );
    // A deleted user's social id is free again.
    assert!(store.delete_user(ann.id).await.expect("delete"));
    assert!(
        store
            .find_social_user(Provider::Apple, "apple-ann")
            .await
            .expect("find")
            .is_none()
    );
}

pub async fn social_concurrent_creates_same_id_one_wins(f: &dyn Fixture) {
    let store = f.open().await;
    // Every create is spawned before any is awaited, so they race.
    let attempts: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            let new = social_user(&format!("racer{i}"), Provider::Steam, "76561197960287930");
            tokio::spawn(async move { (new.id, store.create_social_user(new).await) })
        })
        .collect();
    let mut winners = Vec::new();
    for attempt in attempts {
        let (id, result) = attempt.await.expect("task");
        match result {
            Ok(()) => winners.push(id),
            Err(StorageError::Conflict {
                what: Conflict::SocialId,
            }) => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one account owns the id");
    let found = store
        .find_social_user(Provider::Steam, "76561197960287930")
        .await
        .expect("find")
        .expect("found");
    assert_eq!(found.id, winners[0]);
}
