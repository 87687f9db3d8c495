//! Other users' public profiles (`GET /v2/user`), with whether each is online.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use metafi_proto::api;
use metafi_storage::{Provider, Storage};
use uuid::Uuid;

use crate::CoreError;
use crate::accounts::user_view;

/// Whether a user has a live realtime session: the seam through which services see presence
/// without depending on the realtime crate (which implements it for its session registry).
pub trait OnlineUsers: Send + Sync + fmt::Debug {
    fn is_online(&self, user_id: Uuid) -> bool;
}

/// No realtime edge: nobody is online.
#[derive(Debug, Default, Clone, Copy)]
pub struct NobodyOnline;

impl OnlineUsers for NobodyOnline {
    fn is_online(&self, _user_id: Uuid) -> bool {
        false
    }
}

/// Which users a lookup asks for; any mix, as Nakama's `GetUsersRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserLookup {
    pub ids: Vec<String>,
    pub usernames: Vec<String>,
    /// Facebook ids: the users linked to them (social sign-in).
    pub facebook_ids: Vec<String>,
}

/// Most ids, usernames and Facebook ids one `GET /v2/user` may name (docs/LIMITS.md).
pub const MAX_USERS_PER_LOOKUP: usize = 1000;

#[derive(Debug)]
pub struct Users {
    store: Arc<dyn Storage>,
    online: Arc<dyn OnlineUsers>,
}

impl Users {
    pub fn new(store: Arc<dyn Storage>, online: Arc<dyn OnlineUsers>) -> Self {
        Users { store, online }
    }

    /// Whether `user_id` appears online (`GET /v2/account` fills `user.online` with it).
    pub fn is_online(&self, user_id: Uuid) -> bool {
        self.online.is_online(user_id)
    }

    /// Up to `count` (at most [`MAX_USERS_PER_LOOKUP`]) users picked at random, as Nakama:
    /// the users after a random id, then from the start when those are too few.
    pub async fn random(&self, count: usize) -> Result<Vec<metafi_storage::User>, CoreError> {
        if count > MAX_USERS_PER_LOOKUP {
            return Err(CoreError::invalid(format!(
                "Too many users requested: at most {MAX_USERS_PER_LOOKUP}."
            )));
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut users = self
            .store
            .users_after(Uuid::new_v4(), count)
            .await
            .map_err(|e| CoreError::storage("reading random users", e))?;
        if users.len() < count {
            let more = self
                .store
                .users_after(Uuid::nil(), count)
                .await
                .map_err(|e| CoreError::storage("reading random users", e))?;
            let mut seen: HashSet<Uuid> = users.iter().map(|u| u.id).collect();
            for user in more {
                if users.len() >= count {
                    break;
                }
                if seen.insert(user.id) {
                    users.push(user);
                }
            }
        }
        Ok(users)
    }

    /// The users matching any of the ids, usernames or Facebook ids, each once, with `online`
    /// filled in.
    /// Unknown ids and names are skipped; an id that is not a UUID is refused with Nakama's
    /// message.
    pub async fn users(&self, lookup: UserLookup) -> Result<Vec<api::User>, CoreError> {
        Ok(self
            .stored_users(lookup)
            .await?
            .into_iter()
            .map(|user| {
                let online = self.online.is_online(user.id);
                api::User {
                    online,
                    ..user_view(user)
                }
            })
            .collect())
    }

    /// [`Users::users`] as stored rows (server code shapes them itself); `online` comes from
    /// [`Users::is_online`].
    pub async fn stored_users(
        &self,
        lookup: UserLookup,
    ) -> Result<Vec<metafi_storage::User>, CoreError> {
        let asked = lookup.ids.len() + lookup.usernames.len() + lookup.facebook_ids.len();
        if asked > MAX_USERS_PER_LOOKUP {
            // Nakama has no cap; one request naming ten thousand users would cost the storage
            // ten thousand look-ups.
            return Err(CoreError::invalid(format!(
                "Too many users requested: at most {MAX_USERS_PER_LOOKUP} ids and usernames together."
            )));
        }
        let mut ids = Vec::with_capacity(lookup.ids.len());
        for id in &lookup.ids {
            let parsed = Uuid::parse_str(id)
                .map_err(|_| CoreError::invalid(format!("ID '{id}' is not a valid system ID.")))?;
            ids.push(parsed);
        }
        // A name with a NUL character names nobody (no stored name has one).
        let usernames: Vec<String> = lookup
            .usernames
            .into_iter()
            .filter(|name| !name.contains('\0'))
            .collect();
        let mut found = Vec::new();
        if !ids.is_empty() {
            found = self
                .store
                .users_by_id(&ids)
                .await
                .map_err(|e| CoreError::storage("reading users by id", e))?;
        }
        if !usernames.is_empty() {
            let by_name = self
                .store
                .users_by_username(&usernames)
                .await
                .map_err(|e| CoreError::storage("reading users by username", e))?;
            found.extend(by_name);
        }
        if !lookup.facebook_ids.is_empty() {
            let by_facebook = self
                .store
                .users_by_social_id(Provider::Facebook, &lookup.facebook_ids)
                .await
                .map_err(|e| CoreError::storage("reading users by facebook id", e))?;
            found.extend(by_facebook);
        }
        let mut seen = HashSet::with_capacity(found.len());
        found.retain(|user| seen.insert(user.id));
        Ok(found)
    }
}
