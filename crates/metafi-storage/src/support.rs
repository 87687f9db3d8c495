//! Pieces every backend shares so that they behave identically: the object version hash,
//! Nakama's write/delete permission rules, batch validation, and the opaque cursors of listings.
//!
//! Backends call these; services need only [`message_cacheable_cursor`], to complete a page.

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use md5::{Digest as _, Md5};
use uuid::Uuid;

use crate::{
    Caller, ChannelMessage, Direction, MessagePage, ObjectDelete, ObjectPage, ObjectWrite,
    StorageError, StorageObject, VersionCheck,
};

/// The version of an object value: lowercase hex MD5 of its text, as Nakama computes it.
pub fn object_version(value: &str) -> String {
    let digest = Md5::digest(value.as_bytes());
    let mut out = String::with_capacity(32);
    for byte in digest.iter() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Why an operation of a batch was refused; turned into the batch's error with its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    Version,
    Permission,
    /// A client deleted an object that does not exist (Nakama refuses it).
    Missing,
}

impl Reject {
    /// The storage error for operation `index` of a batch.
    pub fn at(self, index: usize) -> StorageError {
        match self {
            Reject::Version => StorageError::VersionMismatch { index },
            Reject::Permission => StorageError::PermissionDenied { index },
            Reject::Missing => StorageError::NotFound {
                what: "storage object",
            },
        }
    }
}

/// What a backend knows about the current row of an object when checking an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current<'a> {
    pub version: &'a str,
    pub permission_write: u8,
}

/// Checks a write batch before any row is read: text the backends can all store (see
/// [`text`](crate::text)), permissions in range, no object named twice.
pub fn validate_writes(writes: &[ObjectWrite]) -> Result<(), StorageError> {
    crate::text::check_writes(writes)?;
    let mut seen = HashSet::with_capacity(writes.len());
    for write in writes {
        if write.permission_read > 2 || write.permission_write > 1 {
            return Err(StorageError::Invalid {
                message: format!(
                    "permissions out of range (read {}, write {})",
                    write.permission_read, write.permission_write
                ),
            });
        }
        if !seen.insert((&write.collection, &write.key, write.user_id)) {
            return Err(duplicate_object(&write.collection, &write.key));
        }
    }
    Ok(())
}

/// Checks a delete batch before any row is read: no NUL in its text, no object named twice.
pub fn validate_deletes(deletes: &[ObjectDelete]) -> Result<(), StorageError> {
    crate::text::check_deletes(deletes)?;
    let mut seen = HashSet::with_capacity(deletes.len());
    for delete in deletes {
        if !seen.insert((&delete.collection, &delete.key, delete.user_id)) {
            return Err(duplicate_object(&delete.collection, &delete.key));
        }
    }
    Ok(())
}

fn duplicate_object(collection: &str, key: &str) -> StorageError {
    StorageError::Invalid {
        message: format!("object {collection}/{key} appears twice in one batch"),
    }
}

/// Nakama's rules for one write, given the object's current row (if any).
///
/// A client writes only under its own user id, and only over rows whose write permission is 1;
/// `Absent` fails on any existing row; `Matches` fails when the row is missing or differs.
pub fn check_write(
    caller: Caller,
    write: &ObjectWrite,
    current: Option<Current<'_>>,
) -> Result<(), Reject> {
    let client = match caller {
        Caller::Server => false,
        Caller::User(user) if user == write.user_id => true,
        Caller::User(_) => return Err(Reject::Permission),
    };
    match (&write.version, current) {
        (VersionCheck::Absent, Some(_)) => Err(Reject::Version),
        (VersionCheck::Matches(_), None) => Err(Reject::Version),
        (_, Some(row)) if client && row.permission_write != 1 => Err(Reject::Permission),
        (VersionCheck::Matches(expected), Some(row)) if row.version != expected => {
            Err(Reject::Version)
        }
        _ => Ok(()),
    }
}

/// Nakama's rules for one delete; `Ok(true)` when there is a row to delete.
///
/// A client's delete must delete a row (Nakama checks the rows affected); server code deleting
/// a missing object without a version is a no-op, with a version it is a version mismatch.
pub fn check_delete(
    caller: Caller,
    delete: &ObjectDelete,
    current: Option<Current<'_>>,
) -> Result<bool, Reject> {
    let client = match caller {
        Caller::Server => false,
        Caller::User(user) if user == delete.user_id => true,
        Caller::User(_) => return Err(Reject::Permission),
    };
    match (&delete.version, current) {
        (None, None) if client => Err(Reject::Missing),
        (None, None) => Ok(false),
        (Some(_), None) => Err(Reject::Version),
        (_, Some(row)) if client && row.permission_write != 1 => Err(Reject::Permission),
        (Some(expected), Some(row)) if row.version != *expected => Err(Reject::Version),
        (_, Some(_)) => Ok(true),
    }
}

/// Which objects of a collection a caller may see in a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListScope {
    /// Every object (server code).
    All,
    /// Read permission 2 only.
    Public,
    /// Read permission 1 or 2 (a user listing its own objects).
    OwnerReadable,
}

/// The listing scope of Nakama for this caller and owner filter.
pub fn list_scope(caller: Caller, owner: Option<Uuid>) -> ListScope {
    match (caller, owner) {
        (Caller::Server, _) => ListScope::All,
        (Caller::User(user), Some(owner)) if user == owner => ListScope::OwnerReadable,
        (Caller::User(_), _) => ListScope::Public,
    }
}

/// The columns of the listing order `(read, key, user_id)` that vary within a listing. Those
/// its filter fixes (`read` in a public listing, `user_id` in an owner's) are left out of the
/// cursor comparison and the sort: the same order, but the database walks one index range
/// instead of sorting what follows the cursor.
pub fn object_order(scope: ListScope, owner: Option<Uuid>) -> &'static [&'static str] {
    match (scope == ListScope::Public, owner.is_some()) {
        (true, true) => &["key"],
        (true, false) => &["key", "user_id"],
        (false, true) => &["read", "key"],
        (false, false) => &["read", "key", "user_id"],
    }
}

/// Whether a caller may read an object with this owner and read permission.
pub fn may_read(caller: Caller, owner: Uuid, permission_read: u8) -> bool {
    match caller {
        Caller::Server => true,
        Caller::User(user) => permission_read == 2 || (permission_read == 1 && user == owner),
    }
}

/// Tag 1 was the `(user_id, key)` cursor of the old listing order: such cursors are refused.
const OBJECT_CURSOR_TAG: u8 = 3;
const MESSAGE_CURSOR_TAG: u8 = 2;

/// The position after which an object listing resumes: the `(read, key, user_id)` of the last
/// object of the previous page. Every listing is ordered by `(read, key, user_id)`, Nakama's
/// order (`ORDER BY read ASC, key ASC, user_id ASC`; its owner listings order by `read, key`,
/// the same order when the owner is fixed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectCursor {
    pub permission_read: u8,
    pub key: String,
    pub user_id: Uuid,
}

impl ObjectCursor {
    /// The cursor after this object.
    pub fn after(object: &StorageObject) -> Self {
        ObjectCursor {
            permission_read: object.permission_read,
            key: object.key.clone(),
            user_id: object.user_id,
        }
    }

    /// The opaque text form handed to clients.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(18 + self.key.len());
        bytes.push(OBJECT_CURSOR_TAG);
        bytes.push(self.permission_read);
        bytes.extend_from_slice(self.user_id.as_bytes());
        bytes.extend_from_slice(self.key.as_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Parses a cursor from [`ObjectCursor::encode`]; anything else is `Invalid`.
    pub fn decode(text: &str) -> Result<Self, StorageError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad_cursor())?;
        let [tag, permission_read, rest @ ..] = bytes.as_slice() else {
            return Err(bad_cursor());
        };
        if *tag != OBJECT_CURSOR_TAG || *permission_read > 2 || rest.len() < 16 {
            return Err(bad_cursor());
        }
        let (id, key) = rest.split_at(16);
        let user_id = Uuid::from_slice(id).map_err(|_| bad_cursor())?;
        let key = String::from_utf8(key.to_vec()).map_err(|_| bad_cursor())?;
        Ok(ObjectCursor {
            permission_read: *permission_read,
            key,
            user_id,
        })
    }
}

/// Cuts the rows a backend fetched (at most `limit + 1`, in listing order) to a page, with the
/// cursor after its last object when more follow.
pub fn object_page(mut objects: Vec<StorageObject>, limit: usize) -> ObjectPage {
    let cursor = if objects.len() > limit {
        objects.truncate(limit);
        objects.last().map(|o| ObjectCursor::after(o).encode())
    } else {
        None
    };
    ObjectPage { objects, cursor }
}

/// Parses the cursor argument of an object listing; an empty string means "from the start".
pub fn object_cursor(cursor: Option<&str>) -> Result<Option<ObjectCursor>, StorageError> {
    match cursor {
        None | Some("") => Ok(None),
        Some(text) => ObjectCursor::decode(text).map(Some),
    }
}

fn bad_cursor() -> StorageError {
    StorageError::Invalid {
        message: "malformed cursor".to_owned(),
    }
}

/// Where a message listing starts and which way the backend walks the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageQuery {
    /// Walk `(create_time, id)` ascending (else descending).
    pub ascending: bool,
    /// Only rows strictly beyond this key in the walk order.
    pub after: Option<(i64, Uuid)>,
    /// How many rows to fetch: one more than the page, to know whether another page follows.
    pub fetch: usize,
    cursor: Option<MessageCursor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct MessageCursor {
    forward: bool,
    is_next: bool,
    create_time_ms: i64,
    id: Uuid,
}

impl MessageCursor {
    fn encode(&self, channel_id: &str) -> String {
        let mut bytes = Vec::with_capacity(26 + channel_id.len());
        bytes.push(MESSAGE_CURSOR_TAG);
        bytes.push(u8::from(self.forward) | (u8::from(self.is_next) << 1));
        bytes.extend_from_slice(&self.create_time_ms.to_be_bytes());
        bytes.extend_from_slice(self.id.as_bytes());
        bytes.extend_from_slice(channel_id.as_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn decode(text: &str, channel_id: &str) -> Result<Self, StorageError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad_cursor())?;
        if bytes.len() < 26 || bytes[0] != MESSAGE_CURSOR_TAG || bytes[1] > 3 {
            return Err(bad_cursor());
        }
        if &bytes[26..] != channel_id.as_bytes() {
            return Err(StorageError::Invalid {
                message: "cursor belongs to another channel".to_owned(),
            });
        }
        let mut time = [0u8; 8];
        time.copy_from_slice(&bytes[2..10]);
        let id = Uuid::from_slice(&bytes[10..26]).map_err(|_| bad_cursor())?;
        Ok(MessageCursor {
            forward: bytes[1] & 1 == 1,
            is_next: bytes[1] & 2 == 2,
            create_time_ms: i64::from_be_bytes(time),
            id,
        })
    }
}

/// Plans a message listing: which way to walk and from where. The cursor must come from a
/// listing of the same channel in the same direction.
pub fn message_query(
    channel_id: &str,
    direction: Direction,
    limit: usize,
    cursor: Option<&str>,
) -> Result<MessageQuery, StorageError> {
    let forward = direction == Direction::Forward;
    let cursor = cursor
        .filter(|text| !text.is_empty())
        .map(|text| MessageCursor::decode(text, channel_id))
        .transpose()?;
    if let Some(cursor) = &cursor
        && cursor.forward != forward
    {
        return Err(StorageError::Invalid {
            message: "cursor belongs to a listing in the other direction".to_owned(),
        });
    }
    // A "previous page" cursor walks against the listing's direction; the page is flipped back.
    let ascending = match &cursor {
        None => forward,
        Some(cursor) => forward == cursor.is_next,
    };
    Ok(MessageQuery {
        ascending,
        after: cursor.as_ref().map(|c| (c.create_time_ms, c.id)),
        fetch: limit.saturating_add(1),
        cursor,
    })
}

/// Builds the page from the rows a backend fetched for `query` (in walk order, at most
/// `query.fetch` of them), with Nakama's next/previous cursor semantics.
pub fn message_page(
    channel_id: &str,
    direction: Direction,
    query: &MessageQuery,
    mut rows: Vec<ChannelMessage>,
) -> MessagePage {
    let forward = direction == Direction::Forward;
    let limit = query.fetch.saturating_sub(1);
    let more = rows.len() > limit;
    rows.truncate(limit);
    let at = |message: &ChannelMessage, is_next: bool| {
        MessageCursor {
            forward,
            is_next,
            create_time_ms: message.create_time_ms,
            id: message.id,
        }
        .encode(channel_id)
    };
    let further = if more { rows.last() } else { None };
    let back = if query.cursor.is_some() {
        rows.first()
    } else {
        None
    };
    let previous_page = query.cursor.as_ref().is_some_and(|c| !c.is_next);
    let (next_cursor, prev_cursor) = if previous_page {
        let next = back.map(|m| at(m, true));
        let prev = further.map(|m| at(m, false));
        (next, prev)
    } else {
        (further.map(|m| at(m, true)), back.map(|m| at(m, false)))
    };
    if previous_page {
        rows.reverse();
    }
    MessagePage {
        messages: rows,
        next_cursor,
        prev_cursor,
    }
}

/// Nakama's `cacheable_cursor` of a message listing: a forward "next page" cursor placed at the
/// last message of `page` (as returned), which a client stores to fetch only later messages. On
/// an empty page it is the request's own cursor, turned forward; `None` when there is neither.
/// `cursor` must already have been accepted by [`message_query`] for this channel.
pub fn message_cacheable_cursor(
    channel_id: &str,
    page: &[ChannelMessage],
    cursor: Option<&str>,
) -> Option<String> {
    let at = match page.last() {
        Some(last) => (last.create_time_ms, last.id),
        None => {
            let incoming = MessageCursor::decode(cursor.filter(|c| !c.is_empty())?, channel_id);
            let incoming = incoming.ok()?;
            (incoming.create_time_ms, incoming.id)
        }
    };
    Some(
        MessageCursor {
            forward: true,
            is_next: true,
            create_time_ms: at.0,
            id: at.1,
        }
        .encode(channel_id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_md5_hex() {
        assert_eq!(object_version(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            object_version("{\"a\":1}"),
            "bb6cb5c68df4652941caf652a366f2d8"
        );
    }

    #[test]
    fn object_cursor_round_trips_and_rejects_garbage() {
        let cursor = ObjectCursor {
            permission_read: 2,
            key: "k/é".to_owned(),
            user_id: Uuid::new_v4(),
        };
        assert_eq!(ObjectCursor::decode(&cursor.encode()).ok(), Some(cursor));
        for garbage in ["", "!!!", "AQ", "AgAAAAAAAAAAAAAAAAAAAAAA"] {
            assert!(matches!(
                ObjectCursor::decode(garbage),
                Err(StorageError::Invalid { .. })
            ));
        }
    }

    #[test]
    fn message_cursor_is_bound_to_channel_and_direction() {
        let cursor = MessageCursor {
            forward: true,
            is_next: true,
            create_time_ms: 5,
            id: Uuid::new_v4(),
        }
        .encode("room");
        assert!(message_query("room", Direction::Forward, 10, Some(&cursor)).is_ok());
        assert!(message_query("other", Direction::Forward, 10, Some(&cursor)).is_err());
        assert!(message_query("room", Direction::Backward, 10, Some(&cursor)).is_err());
    }

    #[test]
    fn cacheable_cursor_resumes_forward_after_the_page() {
        let message = |create_time_ms| ChannelMessage {
            id: Uuid::new_v4(),
            channel_id: "room".into(),
            code: 0,
            sender_id: Uuid::new_v4(),
            username: "u".into(),
            content: "{}".into(),
            create_time_ms,
            update_time_ms: create_time_ms,
        };
        let page = [message(1), message(2)];
        let cursor = message_cacheable_cursor("room", &page, None).unwrap();
        let query = message_query("room", Direction::Forward, 10, Some(&cursor)).unwrap();
        assert_eq!(query.after, Some((2, page[1].id)));
        assert!(query.ascending);
        // An empty backward page keeps the request's position, turned forward.
        let backward = MessageCursor {
            forward: false,
            is_next: true,
            create_time_ms: 7,
            id: page[0].id,
        }
        .encode("room");
        let cursor = message_cacheable_cursor("room", &[], Some(&backward)).unwrap();
        let query = message_query("room", Direction::Forward, 10, Some(&cursor)).unwrap();
        assert_eq!(query.after, Some((7, page[0].id)));
        assert_eq!(message_cacheable_cursor("room", &[], None), None);
    }
}
