//! Status follows: which sessions want to hear about which users coming online, going offline
//! or changing their status text.

use std::collections::{HashMap, HashSet};
use std::fmt;

use parking_lot::RwLock;
use uuid::Uuid;

/// A follow that would take a session past its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowLimitExceeded {
    pub limit: usize,
}

/// The follow books. Cross-node: the first implementation is [`LocalStatusRegistry`].
pub trait StatusRegistry: Send + Sync + fmt::Debug {
    /// Adds follows; all or none: refused when the session would follow more than `limit`
    /// users.
    fn follow(
        &self,
        session_id: Uuid,
        user_ids: &[Uuid],
        limit: usize,
    ) -> Result<(), FollowLimitExceeded>;

    fn unfollow(&self, session_id: Uuid, user_ids: &[Uuid]);

    /// Drops every follow of a session (it disconnected).
    fn unfollow_all(&self, session_id: Uuid);

    /// The sessions following a user.
    fn followers(&self, user_id: Uuid) -> Vec<Uuid>;

    /// How many users a session follows.
    fn following_count(&self, session_id: Uuid) -> usize;
}

/// Follows of this node's sessions.
#[derive(Debug, Default)]
pub struct LocalStatusRegistry {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Session → users it follows.
    by_session: HashMap<Uuid, HashSet<Uuid>>,
    /// User → sessions following it.
    by_user: HashMap<Uuid, HashSet<Uuid>>,
}

impl LocalStatusRegistry {
    pub fn new() -> LocalStatusRegistry {
        LocalStatusRegistry::default()
    }
}

impl StatusRegistry for LocalStatusRegistry {
    fn follow(
        &self,
        session_id: Uuid,
        user_ids: &[Uuid],
        limit: usize,
    ) -> Result<(), FollowLimitExceeded> {
        let mut inner = self.inner.write();
        let current = inner.by_session.get(&session_id);
        let added = user_ids
            .iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .filter(|id| !current.is_some_and(|c| c.contains(id)))
            .count();
        if current.map_or(0, HashSet::len) + added > limit {
            return Err(FollowLimitExceeded { limit });
        }
        if user_ids.is_empty() {
            return Ok(());
        }
        inner
            .by_session
            .entry(session_id)
            .or_default()
            .extend(user_ids.iter().copied());
        for user_id in user_ids {
            inner
                .by_user
                .entry(*user_id)
                .or_default()
                .insert(session_id);
        }
        Ok(())
    }

    fn unfollow(&self, session_id: Uuid, user_ids: &[Uuid]) {
        let mut inner = self.inner.write();
        let Some(follows) = inner.by_session.get_mut(&session_id) else {
            return;
        };
        let mut removed = Vec::new();
        for user_id in user_ids {
            if follows.remove(user_id) {
                removed.push(*user_id);
            }
        }
        if follows.is_empty() {
            inner.by_session.remove(&session_id);
        }
        for user_id in removed {
            drop_follower(&mut inner.by_user, user_id, session_id);
        }
    }

    fn unfollow_all(&self, session_id: Uuid) {
        let mut inner = self.inner.write();
        let Some(follows) = inner.by_session.remove(&session_id) else {
            return;
        };
        for user_id in follows {
            drop_follower(&mut inner.by_user, user_id, session_id);
        }
    }

    fn followers(&self, user_id: Uuid) -> Vec<Uuid> {
        self.inner
            .read()
            .by_user
            .get(&user_id)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    fn following_count(&self, session_id: Uuid) -> usize {
        self.inner
            .read()
            .by_session
            .get(&session_id)
            .map_or(0, HashSet::len)
    }
}

fn drop_follower(by_user: &mut HashMap<Uuid, HashSet<Uuid>>, user_id: Uuid, session_id: Uuid) {
    if let Some(followers) = by_user.get_mut(&user_id) {
        followers.remove(&session_id);
        if followers.is_empty() {
            by_user.remove(&user_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_unfollow_and_cleanup() {
        let registry = LocalStatusRegistry::new();
        let (s1, s2, u1, u2) = (
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
        );
        registry.follow(s1, &[u1, u2, u1], 10).unwrap();
        registry.follow(s2, &[u1], 10).unwrap();
        assert_eq!(registry.following_count(s1), 2);
        let mut followers = registry.followers(u1);
        followers.sort();
        let mut expected = vec![s1, s2];
        expected.sort();
        assert_eq!(followers, expected);
        registry.unfollow(s1, &[u1]);
        assert_eq!(registry.followers(u1), vec![s2]);
        registry.unfollow_all(s1);
        assert!(registry.followers(u2).is_empty());
        registry.unfollow_all(s2);
        let inner = registry.inner.read();
        assert!(inner.by_session.is_empty() && inner.by_user.is_empty());
    }

    #[test]
    fn the_limit_counts_distinct_new_users() {
        let registry = LocalStatusRegistry::new();
        let s = Uuid::new_v4();
        let users: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
        registry.follow(s, &users[..2], 3).unwrap();
        registry.follow(s, &users[..2], 3).unwrap();
        assert_eq!(
            registry.follow(s, &[Uuid::new_v4(), Uuid::new_v4()], 3),
            Err(FollowLimitExceeded { limit: 3 })
        );
        assert_eq!(
            registry.following_count(s),
            2,
            "a refused follow adds nothing"
        );
        registry.follow(s, &users[2..], 3).unwrap();
    }
}
