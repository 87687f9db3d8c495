//! What text the storage layer accepts, the same on every backend.
//!
//! PostgreSQL cannot store a NUL character in `text` (`invalid byte sequence for encoding
//! "UTF8": 0x00`) and refuses index entries over ~2.7 kB, while SQLite stores both. So that the
//! backends never disagree, every backend calls these checks before it touches the database and
//! refuses such input with [`StorageError::NulCharacter`] or [`StorageError::TooLong`]. The
//! limits are Nakama's column widths, in characters; services validate against the same
//! constants first, with client-facing messages.

use crate::{
    AccountUpdate, ChannelMessage, IdentityRef, NewIdentity, NewUser, ObjectDelete, ObjectId,
    ObjectWrite, StorageError, Unlink,
};

/// Longest storage collection name, in characters (Nakama: `VARCHAR(128)`).
pub const MAX_COLLECTION_CHARS: usize = 128;
/// Longest storage key, in characters (Nakama: `VARCHAR(128)`).
pub const MAX_KEY_CHARS: usize = 128;
/// Longest username, device id or custom id, in characters (Nakama: `VARCHAR(128)`; its API
/// also caps them at 128 bytes).
pub const MAX_ID_CHARS: usize = 128;
/// Longest email address, in characters (Nakama: `VARCHAR(255)`).
pub const MAX_EMAIL_CHARS: usize = 255;
/// Longest display name, location or timezone, in characters (Nakama: `VARCHAR(255)`).
pub const MAX_PROFILE_CHARS: usize = 255;
/// Longest avatar URL, in characters (Nakama: `VARCHAR(512)`).
pub const MAX_AVATAR_URL_CHARS: usize = 512;
/// Longest language tag, in characters (Nakama: `VARCHAR(18)`).
pub const MAX_LANG_TAG_CHARS: usize = 18;

/// Refuses a NUL character anywhere in `text`.
pub fn refuse_nul(field: &'static str, text: &str) -> Result<(), StorageError> {
    if text.contains('\0') {
        return Err(StorageError::NulCharacter { field });
    }
    Ok(())
}

/// Refuses a NUL character, and more than `max` characters.
pub fn check_text(field: &'static str, text: &str, max: usize) -> Result<(), StorageError> {
    refuse_nul(field, text)?;
    if longer_than(text, max) {
        return Err(StorageError::TooLong { field, max });
    }
    Ok(())
}

/// Whether `text` has more than `max` characters (the unit of Nakama's columns).
pub fn longer_than(text: &str, max: usize) -> bool {
    // Byte length bounds the character count from above: only long text is counted.
    text.len() > max && text.chars().count() > max
}

/// A new account: its username and identity.
pub fn check_new_user(new: &NewUser) -> Result<(), StorageError> {
    check_text("username", &new.username, MAX_ID_CHARS)?;
    match &new.identity {
        NewIdentity::Device { id } => check_text("device id", id, MAX_ID_CHARS),
        NewIdentity::Custom { id } => check_text("custom id", id, MAX_ID_CHARS),
        NewIdentity::Email {
            email,
            password_hash,
        } => {
            check_text("email", email, MAX_EMAIL_CHARS)?;
            refuse_nul("password hash", password_hash)
        }
    }
}

/// An identity to look a user up by. Nothing stored can match text these checks refuse.
pub fn check_identity(identity: IdentityRef<'_>) -> Result<(), StorageError> {
    match identity {
        IdentityRef::Device(id) => refuse_nul("device id", id),
        IdentityRef::Custom(id) => refuse_nul("custom id", id),
        IdentityRef::Email(email) => refuse_nul("email", email),
        IdentityRef::Username(name) => refuse_nul("username", name),
    }
}

/// An identity to unlink.
pub fn check_unlink(identity: Unlink<'_>) -> Result<(), StorageError> {
    match identity {
        Unlink::Device(id) => refuse_nul("device id", id),
        Unlink::Custom(id) => id.map_or(Ok(()), |id| refuse_nul("custom id", id)),
        Unlink::Email(email) => email.map_or(Ok(()), |email| refuse_nul("email", email)),
    }
}

/// Usernames to look users up by.
pub fn check_usernames(usernames: &[String]) -> Result<(), StorageError> {
    usernames
        .iter()
        .try_for_each(|name| refuse_nul("username", name))
}

/// A device id to link.
pub fn check_device_id(id: &str) -> Result<(), StorageError> {
    check_text("device id", id, MAX_ID_CHARS)
}

/// A profile update: every field it sets.
pub fn check_update(update: &AccountUpdate) -> Result<(), StorageError> {
    let fields: [(&'static str, &Option<String>, usize); 6] = [
        ("username", &update.username, MAX_ID_CHARS),
        ("display name", &update.display_name, MAX_PROFILE_CHARS),
        ("avatar url", &update.avatar_url, MAX_AVATAR_URL_CHARS),
        ("lang tag", &update.lang_tag, MAX_LANG_TAG_CHARS),
        ("location", &update.location, MAX_PROFILE_CHARS),
        ("timezone", &update.timezone, MAX_PROFILE_CHARS),
    ];
    for (field, value, max) in fields {
        if let Some(value) = value {
            check_text(field, value, max)?;
        }
    }
    if let Some(metadata) = &update.metadata {
        refuse_nul("metadata", metadata)?;
    }
    Ok(())
}

/// A storage collection and key as written.
fn check_collection_and_key(collection: &str, key: &str) -> Result<(), StorageError> {
    check_text("collection", collection, MAX_COLLECTION_CHARS)?;
    check_text("key", key, MAX_KEY_CHARS)
}

/// The text of a write batch.
pub fn check_writes(writes: &[ObjectWrite]) -> Result<(), StorageError> {
    writes.iter().try_for_each(|w| {
        check_collection_and_key(&w.collection, &w.key)?;
        refuse_nul("value", &w.value)?;
        if let crate::VersionCheck::Matches(version) = &w.version {
            refuse_nul("version", version)?;
        }
        Ok(())
    })
}

/// The text of a delete batch. Over-long names are not refused: they name nothing stored.
pub fn check_deletes(deletes: &[ObjectDelete]) -> Result<(), StorageError> {
    deletes.iter().try_for_each(|d| {
        refuse_nul("collection", &d.collection)?;
        refuse_nul("key", &d.key)?;
        d.version
            .as_deref()
            .map_or(Ok(()), |v| refuse_nul("version", v))
    })
}

/// Object ids to read. Over-long names are not refused: they name nothing stored.
pub fn check_object_ids(ids: &[ObjectId]) -> Result<(), StorageError> {
    ids.iter().try_for_each(|id| {
        refuse_nul("collection", &id.collection)?;
        refuse_nul("key", &id.key)
    })
}

/// A channel message to store.
pub fn check_message(message: &ChannelMessage) -> Result<(), StorageError> {
    refuse_nul("channel id", &message.channel_id)?;
    refuse_nul("username", &message.username)?;
    refuse_nul("content", &message.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_and_length_are_refused_by_characters() {
        assert!(check_text("key", &"é".repeat(128), MAX_KEY_CHARS).is_ok());
        assert!(matches!(
            check_text("key", &"k".repeat(129), MAX_KEY_CHARS),
            Err(StorageError::TooLong {
                field: "key",
                max: 128
            })
        ));
        assert!(matches!(
            check_text("key", "a\0b", MAX_KEY_CHARS),
            Err(StorageError::NulCharacter { field: "key" })
        ));
    }
}
