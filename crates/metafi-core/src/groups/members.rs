//! Membership calls: join, leave, add, kick, ban, promote, demote — Nakama's rules.
//!
//! Each call reads the states it needs, decides the changes by Nakama's rules and hands them
//! to the store as compare-and-set changes (`from` = the state read). The store applies them
//! atomically with the invariants (`max_count`, the last superadmin); a change whose user
//! moved meanwhile is skipped, as Nakama's guarded `UPDATE … WHERE state …` would skip it.

use metafi_storage::{MemberChange, MembershipOutcome, MembershipRefusal, group_state};
use serde_json::json;
use uuid::Uuid;

use super::{Actor, Groups, internal};
use crate::channels::message_code;
use crate::notify::codes;
use crate::{CoreError, NewNotification};

const GROUP_FULL: &str = "Group is full.";
const PERMISSION: &str = "Group not found or permission denied.";

/// The membership calls that act on other users, for their error texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Add,
    Kick,
    Ban,
    Promote,
    Demote,
}

impl Action {
    /// Nakama's answer when the group does not exist (reachable by server code only).
    fn failed(self) -> &'static str {
        match self {
            Action::Add => "Error while trying to add users to a group.",
            Action::Kick => "Error while trying to kick users from a group.",
            Action::Ban => "Error while trying to ban users from a group.",
            Action::Promote => "Error while trying to promote users in a group.",
            Action::Demote => "Error while trying to demote users in a group.",
        }
    }
}

impl Groups {
    /// Joins a group: an open group makes the user a member at once; a closed one records a
    /// join request and notifies its superadmins and admins (code -5). Joining again, or while
    /// banned, changes nothing. Nakama's `JoinGroup`.
    pub async fn join(
        &self,
        user_id: Uuid,
        username: &str,
        group_id: Uuid,
    ) -> Result<(), CoreError> {
        let group = self
            .store
            .groups_by_id(&[group_id])
            .await
            .map_err(|e| CoreError::storage("reading a group", e))?
            .pop()
            .ok_or_else(|| CoreError::not_found("Group not found."))?;
        if group.edge_count >= group.max_count {
            return Err(CoreError::invalid(GROUP_FULL));
        }
        let to = if group.open {
            group_state::MEMBER
        } else {
            group_state::JOIN_REQUEST
        };
        let applied = self
            .apply(
                group_id,
                vec![MemberChange {
                    user_id,
                    from: None,
                    to: Some(to),
                }],
                |refusal| match refusal {
                    MembershipRefusal::GroupNotFound => CoreError::not_found("Group not found."),
                    MembershipRefusal::GroupFull => CoreError::invalid(GROUP_FULL),
                },
            )
            .await?;
        if applied.first() != Some(&true) {
            return Ok(());
        }
        if group.open {
            self.announce(group_id, &[(user_id, message_code::GROUP_JOIN)], &[])
                .await;
            return Ok(());
        }
        let admins = self
            .store
            .member_ids_in_states(group_id, &[group_state::SUPERADMIN, group_state::ADMIN])
            .await
            .map_err(|e| CoreError::storage("listing a group's admins", e))?;
        let content = json!({ "group_id": group_id.to_string(), "username": username });
        let notifications = admins
            .into_iter()
            .map(|admin| NewNotification {
                user_id: admin,
                subject: format!("User {username} wants to join your group"),
                content: content.to_string(),
                code: codes::GROUP_JOIN_REQUEST,
                sender_id: Some(user_id),
                persistent: true,
            })
            .collect::<Vec<_>>();
        self.notify(notifications).await;
        Ok(())
    }

    /// Leaves a group. Not being in it, or being banned from it, is not an error. The last
    /// superadmin cannot leave while other members remain; when no one else is a member, the
    /// group is deleted. Nakama's `LeaveGroup`.
    pub async fn leave(&self, user_id: Uuid, group_id: Uuid) -> Result<(), CoreError> {
        const LAST: &str = "Cannot leave group when you are the last superadmin.";
        let Some(state) = self.state_of(group_id, user_id).await? else {
            return Ok(());
        };
        if state == group_state::BANNED {
            return Ok(());
        }
        if state == group_state::SUPERADMIN {
            let others = self
                .store
                .member_ids_in_states(
                    group_id,
                    &[
                        group_state::SUPERADMIN,
                        group_state::ADMIN,
                        group_state::MEMBER,
                    ],
                )
                .await
                .map_err(|e| CoreError::storage("listing a group's members", e))?;
            let superadmins = self
                .store
                .member_ids_in_states(group_id, &[group_state::SUPERADMIN])
                .await
                .map_err(|e| CoreError::storage("listing a group's superadmins", e))?;
            if !superadmins.iter().any(|id| *id != user_id) {
                if !others.iter().any(|id| *id != user_id) {
                    return self.delete(Actor::Server, group_id).await;
                }
                return Err(CoreError::invalid(LAST));
            }
        }
        let applied = self
            .apply(
                group_id,
                vec![MemberChange {
                    user_id,
                    from: Some(state),
                    to: None,
                }],
                |_| CoreError::not_found("Group not found."),
            )
            .await?;
        if applied.first() != Some(&true) {
            if state == group_state::SUPERADMIN {
                // Another superadmin left at the same moment.
                return Err(CoreError::invalid(LAST));
            }
            return Ok(());
        }
        self.announce(
            group_id,
            &[(user_id, message_code::GROUP_LEAVE)],
            &[user_id],
        )
        .await;
        Ok(())
    }

    /// Adds users as members: new users and join requests become members; other states stay.
    /// Each added user is notified (code -4). Nakama's `AddGroupUsers`.
    pub async fn add(
        &self,
        actor: Actor,
        group_id: Uuid,
        user_ids: &[Uuid],
    ) -> Result<(), CoreError> {
        self.caller_state(actor, group_id).await?;
        let group = self
            .store
            .groups_by_id(&[group_id])
            .await
            .map_err(|e| CoreError::storage("reading a group", e))?
            .pop()
            .ok_or_else(|| internal(Action::Add.failed()))?;
        let targets = targets(actor, user_ids);
        let found = self
            .store
            .users_by_id(&targets)
            .await
            .map_err(|e| CoreError::storage("looking up users to add", e))?;
        if targets.iter().any(|id| !found.iter().any(|u| u.id == *id)) {
            return Err(CoreError::invalid("One or more users not found."));
        }
        let mut changes = Vec::with_capacity(targets.len());
        for &user_id in &targets {
            let from = self.state_of(group_id, user_id).await?;
            if matches!(from, None | Some(group_state::JOIN_REQUEST)) {
                changes.push(MemberChange {
                    user_id,
                    from,
                    to: Some(group_state::MEMBER),
                });
            }
        }
        let applied = self
            .apply(group_id, changes.clone(), |refusal| match refusal {
                MembershipRefusal::GroupNotFound => internal(Action::Add.failed()),
                MembershipRefusal::GroupFull => CoreError::invalid(GROUP_FULL),
            })
            .await?;
        let added = applied_users(&changes, &applied, |_| true);
        let events: Vec<(Uuid, i32)> = added
            .iter()
            .map(|id| (*id, message_code::GROUP_ADD))
            .collect();
        self.announce(group_id, &events, &[]).await;
        let content = json!({ "group_id": group_id.to_string(), "name": group.name });
        let sender_id = match actor {
            Actor::User(id) => Some(id),
            Actor::Server => None,
        };
        let notifications = changes
            .iter()
            .zip(&applied)
            .filter(|(_, done)| **done)
            .map(|(change, _)| NewNotification {
                user_id: change.user_id,
                subject: format!("You've been added to group {}", group.name),
                content: content.to_string(),
                code: codes::GROUP_ADD,
                sender_id,
                persistent: true,
            })
            .collect::<Vec<_>>();
        self.notify(notifications).await;
        Ok(())
    }

    /// Removes users from a group. A superadmin (or server code) removes anyone but the last
    /// superadmin; an admin removes members, join requests and bans only. Nakama's
    /// `KickGroupUsers`.
    pub async fn kick(
        &self,
        actor: Actor,
        group_id: Uuid,
        user_ids: &[Uuid],
    ) -> Result<(), CoreError> {
        let caller_state = self.caller_state(actor, group_id).await?;
        self.require_group(group_id, Action::Kick).await?;
        let mut changes = Vec::new();
        for user_id in targets(actor, user_ids) {
            let Some(from) = self.state_of(group_id, user_id).await? else {
                continue;
            };
            if caller_state == group_state::SUPERADMIN || from > group_state::ADMIN {
                changes.push(MemberChange {
                    user_id,
                    from: Some(from),
                    to: None,
                });
            }
        }
        let applied = self
            .apply(group_id, changes.clone(), |_| {
                internal(Action::Kick.failed())
            })
            .await?;
        self.announce_removals(group_id, &changes, &applied, message_code::GROUP_KICK)
            .await;
        Ok(())
    }

    /// Bans users of a group (users not in it are skipped), with the same reach as a kick.
    /// Nakama's `BanGroupUsers`.
    pub async fn ban(
        &self,
        actor: Actor,
        group_id: Uuid,
        user_ids: &[Uuid],
    ) -> Result<(), CoreError> {
        let caller_state = self.caller_state(actor, group_id).await?;
        let mut changes = Vec::new();
        for user_id in targets(actor, user_ids) {
            let Some(from) = self.state_of(group_id, user_id).await? else {
                continue;
            };
            if caller_state == group_state::SUPERADMIN || from > group_state::ADMIN {
                changes.push(MemberChange {
                    user_id,
                    from: Some(from),
                    to: Some(group_state::BANNED),
                });
            }
        }
        match self
            .apply(group_id, changes.clone(), |_| {
                internal(Action::Ban.failed())
            })
            .await
        {
            Ok(applied) => {
                self.announce_removals(group_id, &changes, &applied, message_code::GROUP_BAN)
                    .await;
                Ok(())
            }
            // Nakama's ban of a group that does not exist skips every user.
            Err(CoreError::Status { .. }) if actor == Actor::Server => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Promotes users one step: a member to admin, an admin to superadmin, each only when
    /// the caller ranks above the user's current state. Nakama's `PromoteGroupUsers`.
    pub async fn promote(
        &self,
        actor: Actor,
        group_id: Uuid,
        user_ids: &[Uuid],
    ) -> Result<(), CoreError> {
        let caller_state = self.caller_state(actor, group_id).await?;
        self.require_group(group_id, Action::Promote).await?;
        let mut changes = Vec::new();
        for user_id in targets(actor, user_ids) {
            let Some(from) = self.state_of(group_id, user_id).await? else {
                continue;
            };
            if from > group_state::SUPERADMIN && from > caller_state && from <= group_state::MEMBER
            {
                changes.push(MemberChange {
                    user_id,
                    from: Some(from),
                    to: Some(from - 1),
                });
            }
        }
        let applied = self
            .apply(group_id, changes.clone(), |refusal| match refusal {
                MembershipRefusal::GroupFull => CoreError::invalid(GROUP_FULL),
                MembershipRefusal::GroupNotFound => internal(Action::Promote.failed()),
            })
            .await?;
        let events: Vec<(Uuid, i32)> = applied_users(&changes, &applied, |_| true)
            .into_iter()
            .map(|id| (id, message_code::GROUP_PROMOTE))
            .collect();
        self.announce(group_id, &events, &[]).await;
        Ok(())
    }

    /// Demotes users one step: a superadmin to admin (never the last one), an admin to
    /// member, each only when the caller ranks at least as high. Nakama's `DemoteGroupUsers`.
    pub async fn demote(
        &self,
        actor: Actor,
        group_id: Uuid,
        user_ids: &[Uuid],
    ) -> Result<(), CoreError> {
        let caller_state = self.caller_state(actor, group_id).await?;
        self.require_group(group_id, Action::Demote).await?;
        let mut changes = Vec::new();
        for user_id in targets(actor, user_ids) {
            let Some(from) = self.state_of(group_id, user_id).await? else {
                continue;
            };
            if from >= caller_state && from < group_state::MEMBER {
                changes.push(MemberChange {
                    user_id,
                    from: Some(from),
                    to: Some(from + 1),
                });
            }
        }
        let applied = self
            .apply(group_id, changes.clone(), |refusal| match refusal {
                MembershipRefusal::GroupFull => CoreError::invalid(GROUP_FULL),
                MembershipRefusal::GroupNotFound => internal(Action::Demote.failed()),
            })
            .await?;
        let events: Vec<(Uuid, i32)> = applied_users(&changes, &applied, |_| true)
            .into_iter()
            .map(|id| (id, message_code::GROUP_DEMOTE))
            .collect();
        self.announce(group_id, &events, &[]).await;
        Ok(())
    }

    /// The caller's rank: server code is a superadmin; a user must be a superadmin or an admin
    /// of the group.
    async fn caller_state(&self, actor: Actor, group_id: Uuid) -> Result<i32, CoreError> {
        match actor {
            Actor::Server => Ok(group_state::SUPERADMIN),
            Actor::User(user_id) => match self.state_of(group_id, user_id).await? {
                Some(state) if state <= group_state::ADMIN => Ok(state),
                _ => Err(CoreError::not_found(PERMISSION)),
            },
        }
    }

    async fn require_group(&self, group_id: Uuid, action: Action) -> Result<(), CoreError> {
        let found = self
            .store
            .groups_by_id(&[group_id])
            .await
            .map_err(|e| CoreError::storage("reading a group", e))?;
        if found.is_empty() {
            return Err(internal(action.failed()));
        }
        Ok(())
    }

    async fn apply(
        &self,
        group_id: Uuid,
        changes: Vec<MemberChange>,
        refused: impl FnOnce(MembershipRefusal) -> CoreError,
    ) -> Result<Vec<bool>, CoreError> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        match self
            .store
            .change_members(group_id, changes, self.clock.now_ms())
            .await
            .map_err(|e| CoreError::storage("changing group members", e))?
        {
            MembershipOutcome::Applied(flags) => Ok(flags),
            MembershipOutcome::Refused(refusal) => Err(refused(refusal)),
        }
    }

    /// After a kick or ban: a system message for each removed superadmin, admin or member
    /// (not for join requests or bans, as Nakama), whose sessions also leave the channel.
    async fn announce_removals(
        &self,
        group_id: Uuid,
        changes: &[MemberChange],
        applied: &[bool],
        code: i32,
    ) {
        let removed = applied_users(changes, applied, |change| {
            change.from.is_some_and(group_state::is_member)
        });
        let events: Vec<(Uuid, i32)> = removed.iter().map(|id| (*id, code)).collect();
        self.announce(group_id, &events, &removed).await;
    }

    /// Sends notifications; a failure is logged, never the call's failure (as in Nakama).
    async fn notify(&self, notifications: Vec<NewNotification>) {
        if notifications.is_empty() {
            return;
        }
        if let Err(e) = self.notifier.notify(notifications).await {
            tracing::warn!(error = %e, "could not send group notifications");
        }
    }
}

/// The users of the changes the store applied that satisfy `keep`, in order.
fn applied_users(
    changes: &[MemberChange],
    applied: &[bool],
    keep: impl Fn(&MemberChange) -> bool,
) -> Vec<Uuid> {
    changes
        .iter()
        .zip(applied)
        .filter(|(change, done)| **done && keep(change))
        .map(|(change, _)| change.user_id)
        .collect()
}

/// The users a call acts on: each once, never the caller itself (Nakama skips the caller).
fn targets(actor: Actor, user_ids: &[Uuid]) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = Vec::with_capacity(user_ids.len());
    for &id in user_ids {
        if Actor::User(id) != actor && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}
