//! Friend import from fake Facebook and Steam providers on 127.0.0.1, into SQLite: every page
//! of the Graph API's friend list, Steam's friend list, Nakama's codes and messages when a
//! provider refuses, the notification each new friend gets, and `sync` on sign-in and link.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_proto::Code;
use metafi_storage::{FriendState, NewSocialUser, Provider, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use serde_json::json;
use tempfile::TempDir;
use uuid::Uuid;

use super::tests::{Fake, config, fake};
use super::{Credential, SocialConfig, SocialSignIn};
use crate::friends::{Actor, Friends, FriendsConfig};
use crate::notify::{NewNotification, Notifier, codes};
use crate::{Clock, CoreError, ManualClock, NobodyOnline};

const STEAM_ME: &str = "76561197960287930";
const STEAM_ANN: &str = "76561197960287931";

#[derive(Debug, Default)]
struct Recorder {
    sent: Mutex<Vec<NewNotification>>,
}

#[async_trait]
impl Notifier for Recorder {
    async fn notify(&self, notifications: Vec<NewNotification>) -> Result<(), CoreError> {
        self.sent.lock().extend(notifications);
        Ok(())
    }
}

struct World {
    _dir: TempDir,
    store: Arc<dyn Storage>,
    social: SocialSignIn,
    sent: Arc<Recorder>,
}

fn world(config: SocialConfig) -> World {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("import.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let sent = Arc::new(Recorder::default());
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(1_700_000_000_000));
    let friends = Arc::new(Friends::new(
        Arc::clone(&store),
        Arc::clone(&sent) as Arc<dyn Notifier>,
        Arc::new(NobodyOnline),
        Arc::clone(&clock),
        FriendsConfig::default(),
    ));
    let social = SocialSignIn::new(Arc::clone(&store), config, clock)
        .expect("client")
        .with_friends(friends);
    World {
        _dir: dir,
        store,
        social,
        sent,
    }
}

impl World {
    async fn user(&self, provider: Provider, provider_id: &str) -> Actor {
        let id = Uuid::new_v4();
        let username = format!("u{}", &id.simple().to_string()[..8]);
        self.store
            .create_social_user(NewSocialUser {
                id,
                username: username.clone(),
                provider,
                provider_id: provider_id.to_owned(),
                display_name: String::new(),
                avatar_url: String::new(),
                email: None,
                now_ms: 1_700_000_000_000,
            })
            .await
            .expect("create");
        Actor { id, username }
    }

    async fn friends_of(&self, user: Uuid) -> Vec<(Uuid, FriendState)> {
        let mut edges: Vec<_> = self
            .store
            .list_friends(user, None, 100, None)
            .await
            .expect("list")
            .friends
            .iter()
            .map(|f| (f.user.id, f.state))
            .collect();
        edges.sort();
        edges
    }

    fn sent(&self) -> Vec<NewNotification> {
        std::mem::take(&mut *self.sent.sent.lock())
    }
}

fn sorted(mut ids: Vec<(Uuid, FriendState)>) -> Vec<(Uuid, FriendState)> {
    ids.sort();
    ids
}

fn status_of(result: Result<(), CoreError>) -> (Code, String) {
    match result {
        Err(CoreError::Status { code, message }) => (code, message),
        Err(other) => (other.code(), other.to_string()),
        Ok(()) => panic!("expected an error"),
    }
}

fn page(ids: &[&str], after: Option<&str>) -> Vec<u8> {
    let data: Vec<_> = ids.iter().map(|id| json!({"id": id, "name": id})).collect();
    let paging = match after {
        Some(after) => {
            json!({"cursors": {"before": "b", "after": after}, "next": "https://graph/next"})
        }
        None => json!({"cursors": {"before": "b", "after": "end"}}),
    };
    json!({"data": data, "paging": paging})
        .to_string()
        .into_bytes()
}

async fn facebook_fake() -> Fake {
    fake(vec![
        (
            "/facebook/friends?access_token=tok",
            200,
            page(&["fb-ann", "fb-nobody"], Some("c1")),
        ),
        (
            "/facebook/friends?access_token=tok&after=c1",
            200,
            page(&["fb-bob"], None),
        ),
        (
            "/facebook/me",
            200,
            json!({"id": "fb-me", "name": "Me"})
                .to_string()
                .into_bytes(),
        ),
    ])
    .await
}

fn facebook_config(fake: &Fake) -> SocialConfig {
    SocialConfig {
        facebook_friends_url: format!("{}/facebook/friends", fake.base),
        ..config(&fake.base)
    }
}

#[tokio::test]
async fn facebook_friends_of_every_page_become_friends_and_are_told() {
    let provider = facebook_fake().await;
    let w = world(facebook_config(&provider));
    let me = w.user(Provider::Facebook, "fb-me").await;
    let ann = w.user(Provider::Facebook, "fb-ann").await;
    let bob = w.user(Provider::Facebook, "fb-bob").await;
    w.social
        .import_facebook_friends(&me, "tok", false)
        .await
        .expect("import");
    assert_eq!(
        w.friends_of(me.id).await,
        sorted(vec![
            (ann.id, FriendState::Friend),
            (bob.id, FriendState::Friend)
        ])
    );
    let requests = provider.requests.lock().clone();
    assert_eq!(
        requests,
        vec![
            "/facebook/friends?access_token=tok".to_owned(),
            "/facebook/friends?access_token=tok&after=c1".to_owned(),
        ]
    );
    let sent = w.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    for (notification, to) in sent.iter().zip([ann.id, bob.id]) {
        assert_eq!(notification.user_id, to);
        assert_eq!(notification.code, codes::FRIEND_JOIN_GAME);
        assert_eq!(notification.subject, "Your friend has just joined the game");
        assert_eq!(notification.sender_id, Some(me.id));
        assert!(notification.persistent);
        let content: serde_json::Value = serde_json::from_str(&notification.content).expect("json");
        assert_eq!(content, json!({"username": me.username}));
    }
}

#[tokio::test]
async fn facebook_refusals_answer_nakamas_codes() {
    let provider = fake(vec![("/facebook/friends", 400, b"{}".to_vec())]).await;
    let w = world(facebook_config(&provider));
    let me = w.user(Provider::Facebook, "fb-me").await;
    assert_eq!(
        status_of(w.social.import_facebook_friends(&me, "", false).await),
        (Code::InvalidArgument, "Facebook token is required.".into())
    );
    assert_eq!(
        status_of(w.social.import_facebook_friends(&me, "bad", true).await),
        (
            Code::Unauthenticated,
            "Could not authenticate Facebook profile.".into()
        )
    );
}

#[tokio::test]
async fn facebook_paging_stops_when_the_cursor_repeats() {
    // A provider answering the same cursor forever must not loop the server.
    let provider = fake(vec![(
        "/facebook/friends",
        200,
        page(&["fb-ann"], Some("same")),
    )])
    .await;
    let w = world(facebook_config(&provider));
    let me = w.user(Provider::Facebook, "fb-me").await;
    let ann = w.user(Provider::Facebook, "fb-ann").await;
    w.social
        .import_facebook_friends(&me, "tok", false)
        .await
        .expect("import");
    assert_eq!(
        w.friends_of(me.id).await,
        vec![(ann.id, FriendState::Friend)]
    );
    assert_eq!(provider.requests.lock().len(), 2);
}

fn steam_auth(steam_id: &str) -> Vec<u8> {
    json!({"response": {"params": {"result": "OK", "steamid": steam_id}}})
        .to_string()
        .into_bytes()
}

fn steam_friends(ids: &[&str]) -> Vec<u8> {
    let friends: Vec<_> = ids
        .iter()
        .map(|id| json!({"steamid": id, "relationship": "friend", "friend_since": 1}))
        .collect();
    json!({"friendslist": {"friends": friends}})
        .to_string()
        .into_bytes()
}

fn steam_config(fake: &Fake) -> SocialConfig {
    SocialConfig {
        steam_friends_url: format!("{}/steam/friends", fake.base),
        ..config(&fake.base)
    }
}

#[tokio::test]
async fn steam_friends_become_friends_and_reset_replaces_the_list() {
    let provider = fake(vec![
        ("/steam/auth", 200, steam_auth(STEAM_ME)),
        ("/steam/friends", 200, steam_friends(&[STEAM_ANN, "123"])),
    ])
    .await;
    let w = world(steam_config(&provider));
    let me = w.user(Provider::Steam, STEAM_ME).await;
    let ann = w.user(Provider::Steam, STEAM_ANN).await;
    let old = w.user(Provider::Facebook, "fb-old").await;
    w.store
        .add_friends(me.id, &[old.id], "{}", 1, 100)
        .await
        .expect("invite");
    w.social
        .import_steam_friends(&me, "ticket", true)
        .await
        .expect("import");
    assert_eq!(
        w.friends_of(me.id).await,
        vec![(ann.id, FriendState::Friend)]
    );
    assert_eq!(
        w.friends_of(old.id).await,
        vec![],
        "reset removed the invite"
    );
    let requests = provider.requests.lock().clone();
    assert!(requests[0].starts_with("/steam/auth?"), "{requests:?}");
    for part in [
        "key=publisher-key",
        &format!("steamid={STEAM_ME}"),
        "relationship=friend",
    ] {
        assert!(requests[1].contains(part), "{requests:?}");
    }
    assert_eq!(w.sent().len(), 1);
}

#[tokio::test]
async fn steam_refusals_answer_nakamas_codes_and_a_private_list_is_empty() {
    let unconfigured = world(SocialConfig::default());
    let me = unconfigured.user(Provider::Steam, STEAM_ME).await;
    assert_eq!(
        status_of(
            unconfigured
                .social
                .import_steam_friends(&me, "t", false)
                .await
        ),
        (
            Code::FailedPrecondition,
            "Steam authentication is not configured.".into()
        )
    );
    let refused = json!({"response": {"error": {"errorcode": 101, "errordesc": "Invalid ticket"}}});
    let provider = fake(vec![
        ("/steam/auth", 200, refused.to_string().into_bytes()),
        ("/steam/friends", 401, b"private".to_vec()),
    ])
    .await;
    let w = world(steam_config(&provider));
    let me = w.user(Provider::Steam, STEAM_ME).await;
    assert_eq!(
        status_of(w.social.import_steam_friends(&me, "", false).await),
        (Code::InvalidArgument, "Steam token is required.".into())
    );
    assert_eq!(
        status_of(w.social.import_steam_friends(&me, "bad", false).await),
        (
            Code::Unauthenticated,
            "Could not authenticate Steam profile.".into()
        )
    );
    // A good ticket whose friend list is private: nothing imported, no error.
    let private = fake_private_steam().await;
    let w = world(steam_config(&private));
    let me = w.user(Provider::Steam, STEAM_ME).await;
    w.social
        .import_steam_friends(&me, "ticket", false)
        .await
        .expect("a private list imports nothing");
    assert_eq!(w.friends_of(me.id).await, vec![]);
    // Any other failure of the list is Nakama's 16.
    let broken = fake(vec![
        ("/steam/auth", 200, steam_auth(STEAM_ME)),
        ("/steam/friends", 500, b"oops".to_vec()),
    ])
    .await;
    let w = world(steam_config(&broken));
    let me = w.user(Provider::Steam, STEAM_ME).await;
    assert_eq!(
        status_of(w.social.import_steam_friends(&me, "ticket", false).await).0,
        Code::Unauthenticated
    );
}

async fn fake_private_steam() -> Fake {
    fake(vec![
        ("/steam/auth", 200, steam_auth(STEAM_ME)),
        ("/steam/friends", 401, b"private".to_vec()),
    ])
    .await
}

#[tokio::test]
async fn sync_on_sign_in_and_link_imports_friends() {
    let provider = facebook_fake().await;
    let w = world(facebook_config(&provider));
    let ann = w.user(Provider::Facebook, "fb-ann").await;
    // Without sync: nothing imported, the provider's friend list is not even read.
    let credential = Credential::Facebook {
        token: "tok".into(),
    };
    let outcome = w
        .social
        .authenticate_and_sync(credential.clone(), None, true, None, false)
        .await
        .expect("sign in");
    assert!(outcome.created);
    assert_eq!(w.friends_of(outcome.user_id).await, vec![]);
    assert!(
        !provider
            .requests
            .lock()
            .iter()
            .any(|r| r.contains("friends"))
    );
    // With sync: ann becomes a friend and is told.
    let again = w
        .social
        .authenticate_and_sync(credential.clone(), None, true, None, true)
        .await
        .expect("sign in");
    assert_eq!(again.user_id, outcome.user_id);
    assert_eq!(
        w.friends_of(outcome.user_id).await,
        vec![(ann.id, FriendState::Friend)]
    );
    assert_eq!(w.sent().len(), 1);

    // Link with sync: a Steam link imports the Steam friends.
    let steam = fake_linkable_steam().await;
    let w = world(steam_config(&steam));
    let ann = w.user(Provider::Steam, STEAM_ANN).await;
    let me = w.user(Provider::Facebook, "fb-me").await;
    w.social
        .link_and_sync(&me, Credential::Steam { token: "t".into() }, true)
        .await
        .expect("link");
    assert_eq!(
        w.friends_of(me.id).await,
        vec![(ann.id, FriendState::Friend)]
    );
    // A failing friend list does not fail the link (Nakama ignores it).
    let broken = fake(vec![
        ("/steam/auth", 200, steam_auth(STEAM_ME)),
        ("/steam/friends", 500, b"oops".to_vec()),
    ])
    .await;
    let w = world(steam_config(&broken));
    let me = w.user(Provider::Facebook, "fb-me").await;
    w.social
        .link_and_sync(&me, Credential::Steam { token: "t".into() }, true)
        .await
        .expect("the link succeeds");
}

async fn fake_linkable_steam() -> Fake {
    fake(vec![
        ("/steam/auth", 200, steam_auth(STEAM_ME)),
        ("/steam/friends", 200, steam_friends(&[STEAM_ANN])),
    ])
    .await
}
