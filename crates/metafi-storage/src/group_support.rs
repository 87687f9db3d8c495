//! Rules both backends share for groups: what text they accept, cursor formats, how a
//! listing's filter turns into a query plan, and the membership-change algorithm's checks.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::group::{GroupFilter, GroupUpdate, MemberChange, MembershipRefusal, NewGroup, state};
use crate::text::{MAX_AVATAR_URL_CHARS, MAX_LANG_TAG_CHARS, check_text};
use crate::{Group, StorageError};

/// Longest group name, in characters (Nakama: `VARCHAR(255)`).
pub const MAX_GROUP_NAME_CHARS: usize = 255;
/// Longest group description, in characters (Nakama: `VARCHAR(255)`).
pub const MAX_GROUP_DESCRIPTION_CHARS: usize = 255;

const GROUP_NAME_CURSOR: u8 = 10;
const GROUP_TIME_CURSOR: u8 = 11;
const EDGE_CURSOR: u8 = 12;

/// Text checks of a new group.
pub fn check_new_group(group: &NewGroup) -> Result<(), StorageError> {
    check_text("group name", &group.name, MAX_GROUP_NAME_CHARS)?;
    check_text(
        "description",
        &group.description,
        MAX_GROUP_DESCRIPTION_CHARS,
    )?;
    check_text("avatar url", &group.avatar_url, MAX_AVATAR_URL_CHARS)?;
    check_text("lang tag", &group.lang_tag, MAX_LANG_TAG_CHARS)?;
    check_text("metadata", &group.metadata, usize::MAX)
}

/// Text checks of a group update.
pub fn check_group_update(update: &GroupUpdate) -> Result<(), StorageError> {
    let checks: [(&'static str, &Option<String>, usize); 5] = [
        ("group name", &update.name, MAX_GROUP_NAME_CHARS),
        (
            "description",
            &update.description,
            MAX_GROUP_DESCRIPTION_CHARS,
        ),
        ("avatar url", &update.avatar_url, MAX_AVATAR_URL_CHARS),
        ("lang tag", &update.lang_tag, MAX_LANG_TAG_CHARS),
        ("metadata", &update.metadata, usize::MAX),
    ];
    for (field, value, max) in checks {
        if let Some(value) = value {
            check_text(field, value, max)?;
        }
    }
    Ok(())
}

/// Where a group listing resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupCursor {
    /// After this name (listings filtered by name go in name order).
    Name(String),
    /// After `(update_time, id)` (every other listing).
    Time { update_time_ms: i64, id: Uuid },
}

impl GroupCursor {
    pub fn after(group: &Group, by_name: bool) -> Self {
        if by_name {
            GroupCursor::Name(group.name.clone())
        } else {
            GroupCursor::Time {
                update_time_ms: group.update_time_ms,
                id: group.id,
            }
        }
    }

    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        match self {
            GroupCursor::Name(name) => {
                bytes.push(GROUP_NAME_CURSOR);
                bytes.extend_from_slice(name.as_bytes());
            }
            GroupCursor::Time { update_time_ms, id } => {
                bytes.push(GROUP_TIME_CURSOR);
                bytes.extend_from_slice(&update_time_ms.to_be_bytes());
                bytes.extend_from_slice(id.as_bytes());
            }
        }
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Parses a cursor of a listing with (`by_name`) or without a name filter.
    pub fn decode(text: &str, by_name: bool) -> Result<Self, StorageError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad_cursor())?;
        match (bytes.split_first(), by_name) {
            (Some((&GROUP_NAME_CURSOR, rest)), true) => String::from_utf8(rest.to_vec())
                .map(GroupCursor::Name)
                .map_err(|_| bad_cursor()),
            (Some((&GROUP_TIME_CURSOR, rest)), false) if rest.len() == 24 => {
                let (time, id) = rest.split_at(8);
                let time = <[u8; 8]>::try_from(time).map_err(|_| bad_cursor())?;
                Ok(GroupCursor::Time {
                    update_time_ms: i64::from_be_bytes(time),
                    id: Uuid::from_slice(id).map_err(|_| bad_cursor())?,
                })
            }
            _ => Err(bad_cursor()),
        }
    }
}

/// Parses a group listing's cursor; `None` or empty: from the start.
pub fn group_cursor(
    filter: &GroupFilter,
    cursor: Option<&str>,
) -> Result<Option<GroupCursor>, StorageError> {
    match cursor {
        None | Some("") => Ok(None),
        Some(text) => GroupCursor::decode(text, filter.name.is_some()).map(Some),
    }
}

/// Cuts fetched rows (at most `limit + 1`) to a page with the cursor after its last group.
pub fn group_page(mut groups: Vec<Group>, limit: usize, by_name: bool) -> crate::GroupPage {
    let cursor = if groups.len() > limit {
        groups.truncate(limit);
        groups
            .last()
            .map(|g| GroupCursor::after(g, by_name).encode())
    } else {
        None
    };
    crate::GroupPage { groups, cursor }
}

/// Where a listing of memberships (a group's users, a user's groups) resumes: after
/// `(state, position, other id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeCursor {
    pub state: i32,
    pub position: i64,
    pub id: Uuid,
}

impl EdgeCursor {
    pub fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(29);
        bytes.push(EDGE_CURSOR);
        bytes.extend_from_slice(&self.state.to_be_bytes());
        bytes.extend_from_slice(&self.position.to_be_bytes());
        bytes.extend_from_slice(self.id.as_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<Self, StorageError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad_cursor())?;
        let [EDGE_CURSOR, rest @ ..] = bytes.as_slice() else {
            return Err(bad_cursor());
        };
        if rest.len() != 28 {
            return Err(bad_cursor());
        }
        let (state, rest) = rest.split_at(4);
        let (position, id) = rest.split_at(8);
        let state = i32::from_be_bytes(<[u8; 4]>::try_from(state).map_err(|_| bad_cursor())?);
        if !(state::SUPERADMIN..=state::BANNED).contains(&state) {
            return Err(bad_cursor());
        }
        Ok(EdgeCursor {
            state,
            position: i64::from_be_bytes(<[u8; 8]>::try_from(position).map_err(|_| bad_cursor())?),
            id: Uuid::from_slice(id).map_err(|_| bad_cursor())?,
        })
    }
}

/// What a membership listing reads: the state range and where to resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeQuery {
    pub min_state: i32,
    pub max_state: i32,
    pub after: Option<EdgeCursor>,
    /// Rows to fetch: one more than the page, to know whether another follows.
    pub fetch: usize,
}

/// Validates a membership listing's arguments: a cursor made under another state filter is
/// invalid, as in Nakama.
pub fn edge_query(
    state_filter: Option<i32>,
    limit: usize,
    cursor: Option<&str>,
) -> Result<EdgeQuery, StorageError> {
    let after = match cursor {
        None | Some("") => None,
        Some(text) => Some(EdgeCursor::decode(text)?),
    };
    if let (Some(state), Some(after)) = (state_filter, after)
        && state != after.state
    {
        return Err(bad_cursor());
    }
    let (min_state, max_state) = match state_filter {
        Some(s) => (s, s),
        None => (state::SUPERADMIN, state::JOIN_REQUEST),
    };
    Ok(EdgeQuery {
        min_state,
        max_state,
        after,
        fetch: limit.saturating_add(1),
    })
}

/// Cuts fetched rows (with their edge keys) to a page and its cursor.
pub fn edge_page<T>(mut rows: Vec<(T, EdgeCursor)>, limit: usize) -> (Vec<T>, Option<String>) {
    let cursor = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|(_, key)| key.encode())
    } else {
        None
    };
    (rows.into_iter().map(|(row, _)| row).collect(), cursor)
}

/// The name pattern of a name filter, as Nakama reads it: leading `%` and spaces trimmed, then
/// matched case-insensitively with `%` and `_` as wildcards (`ILIKE`).
pub fn name_pattern(name: &str) -> String {
    name.trim_start_matches(['%', ' ']).to_owned()
}

/// What a batch of membership changes does, worked out before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipPlan {
    /// Per change: the write to make, or `None` when the change is skipped.
    pub writes: Vec<Option<MemberChange>>,
    /// The group's member count afterwards.
    pub edge_count: i32,
}

/// Plans a batch of membership changes (the algorithm of [`GroupStore::change_members`],
/// shared by the backends): `current` holds the state of every user the changes name (absent:
/// no membership), `superadmins` how many superadmins the group has. Changes apply in order,
/// each seeing the earlier ones.
///
/// [`GroupStore::change_members`]: crate::GroupStore::change_members
pub fn plan_changes(
    edge_count: i32,
    max_count: i32,
    mut superadmins: usize,
    mut current: HashMap<Uuid, i32>,
    changes: &[MemberChange],
) -> Result<MembershipPlan, MembershipRefusal> {
    let mut count = edge_count;
    let mut writes = Vec::with_capacity(changes.len());
    for change in changes {
        let now = current.get(&change.user_id).copied();
        if now != change.from || now == change.to {
            writes.push(None);
            continue;
        }
        let loses_superadmin =
            now == Some(state::SUPERADMIN) && change.to != Some(state::SUPERADMIN);
        if loses_superadmin && superadmins <= 1 {
            writes.push(None);
            continue;
        }
        let was = now.is_some_and(state::is_member);
        let will = change.to.is_some_and(state::is_member);
        if will && !was {
            if count >= max_count {
                return Err(MembershipRefusal::GroupFull);
            }
            count += 1;
        } else if was && !will {
            count -= 1;
        }
        if loses_superadmin {
            superadmins -= 1;
        } else if change.to == Some(state::SUPERADMIN) {
            superadmins += 1;
        }
        match change.to {
            Some(to) => current.insert(change.user_id, to),
            None => current.remove(&change.user_id),
        };
        writes.push(Some(*change));
    }
    Ok(MembershipPlan {
        writes,
        edge_count: count,
    })
}

fn bad_cursor() -> StorageError {
    StorageError::Invalid {
        message: "malformed cursor".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_other_kinds() {
        let name = GroupCursor::Name("héllo".into());
        assert_eq!(
            GroupCursor::decode(&name.encode(), true).ok(),
            Some(name.clone())
        );
        assert!(GroupCursor::decode(&name.encode(), false).is_err());
        let time = GroupCursor::Time {
            update_time_ms: -5,
            id: Uuid::from_u128(7),
        };
        assert_eq!(GroupCursor::decode(&time.encode(), false).ok(), Some(time));
        let edge = EdgeCursor {
            state: 3,
            position: 99,
            id: Uuid::from_u128(1),
        };
        assert_eq!(EdgeCursor::decode(&edge.encode()).ok(), Some(edge));
        assert!(EdgeCursor::decode("nope").is_err());
        assert!(edge_query(Some(2), 10, Some(&edge.encode())).is_err());
        assert!(edge_query(Some(3), 10, Some(&edge.encode())).is_ok());
    }

    fn change(user: u128, from: Option<i32>, to: Option<i32>) -> MemberChange {
        MemberChange {
            user_id: Uuid::from_u128(user),
            from,
            to,
        }
    }

    #[test]
    fn plan_keeps_the_count_the_cap_and_a_superadmin() {
        let current = HashMap::from([(Uuid::from_u128(1), state::SUPERADMIN)]);
        // Two joins into a group of 1 capped at 2: the second is refused.
        let joins = [
            change(2, None, Some(state::MEMBER)),
            change(3, None, Some(state::MEMBER)),
        ];
        assert_eq!(
            plan_changes(1, 2, 1, current.clone(), &joins),
            Err(MembershipRefusal::GroupFull)
        );
        // A join request does not count; a stale `from` is skipped.
        let plan = plan_changes(
            1,
            2,
            1,
            current.clone(),
            &[
                change(2, None, Some(state::JOIN_REQUEST)),
                change(2, None, Some(state::MEMBER)),
                change(2, Some(state::JOIN_REQUEST), Some(state::MEMBER)),
            ],
        )
        .expect("plan");
        assert_eq!(plan.edge_count, 2);
        assert_eq!(
            plan.writes.iter().map(Option::is_some).collect::<Vec<_>>(),
            [true, false, true]
        );
        // The last superadmin is never removed or demoted.
        let plan = plan_changes(
            1,
            2,
            1,
            current,
            &[change(1, Some(state::SUPERADMIN), None)],
        )
        .expect("plan");
        assert_eq!(plan.writes, [None]);
        assert_eq!(plan.edge_count, 1);
    }
}
