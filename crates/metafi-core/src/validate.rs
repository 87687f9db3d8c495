//! Input rules for identities, usernames, profile fields and storage names: Nakama's, so that
//! what one server accepts the other accepts too, plus the limits of Nakama's columns (where
//! Nakama itself fails with an internal error, MetaFi answers InvalidArgument).

use metafi_storage::text::{
    MAX_AVATAR_URL_CHARS, MAX_COLLECTION_CHARS, MAX_KEY_CHARS, MAX_LANG_TAG_CHARS,
    MAX_PROFILE_CHARS, longer_than,
};

use crate::CoreError;

/// ASCII control characters and ASCII whitespace, as POSIX `[[:cntrl:]]|[[:space:]]` in Go's
/// regexp (ASCII-only classes).
fn has_control_or_space(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 || b == 0x7f || b == b' ')
}

/// What is wrong with a device id, custom id, email address, password or username. The rule
/// is here once; each edge words the fault its own way (REST with Nakama's API texts, server
/// code with Nakama's runtime texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Empty.
    Missing,
    /// Has spaces or control characters.
    Characters,
    /// Not shaped like an email address.
    Format,
    /// Outside the allowed length (for a password: too short).
    Length,
    /// A password longer than bcrypt reads (72 bytes).
    TooLong,
}

/// A device id: 10-128 bytes without spaces or control characters.
pub fn device_id_fault(id: &str) -> Option<Fault> {
    id_fault(id, 10)
}

/// A custom id: 6-128 bytes without spaces or control characters.
pub fn custom_id_fault(id: &str) -> Option<Fault> {
    id_fault(id, 6)
}

fn id_fault(id: &str, min: usize) -> Option<Fault> {
    if id.is_empty() {
        Some(Fault::Missing)
    } else if has_control_or_space(id) {
        Some(Fault::Characters)
    } else if !(min..=128).contains(&id.len()) {
        Some(Fault::Length)
    } else {
        None
    }
}

/// A non-empty email address: no spaces or control characters, `a@b.c`, 10-255 bytes
/// (checked in that order, as Nakama).
pub fn email_fault(email: &str) -> Option<Fault> {
    if email.is_empty() {
        Some(Fault::Missing)
    } else if has_control_or_space(email) {
        Some(Fault::Characters)
    } else if !looks_like_email(email) {
        Some(Fault::Format)
    } else if !(10..=255).contains(&email.len()) {
        Some(Fault::Length)
    } else {
        None
    }
}

/// A password: at least 8 bytes, at most the 72 bcrypt reads.
pub fn password_fault(password: &str) -> Option<Fault> {
    if password.len() < 8 {
        Some(Fault::Length)
    } else if password.len() > 72 {
        Some(Fault::TooLong)
    } else {
        None
    }
}

/// A username given when signing in: the characters, then 1-128 bytes (Nakama's order).
pub fn username_fault(username: &str) -> Option<Fault> {
    if !username_characters_ok(username) {
        Some(Fault::Characters)
    } else if username.is_empty() || username.len() > 128 {
        Some(Fault::Length)
    } else {
        None
    }
}

pub(crate) fn device_id(id: &str) -> Result<(), CoreError> {
    match device_id_fault(id) {
        None => Ok(()),
        Some(Fault::Missing) => Err(CoreError::invalid("Device ID is required.")),
        Some(Fault::Characters) => Err(CoreError::invalid(
            "Device ID invalid, no spaces or control characters allowed.",
        )),
        Some(_) => Err(CoreError::invalid(
            "Device ID invalid, must be 10-128 bytes.",
        )),
    }
}

pub(crate) fn custom_id(id: &str) -> Result<(), CoreError> {
    match custom_id_fault(id) {
        None => Ok(()),
        Some(Fault::Missing) => Err(CoreError::invalid("Custom ID is required.")),
        Some(Fault::Characters) => Err(CoreError::invalid(
            "Custom ID invalid, no spaces or control characters allowed.",
        )),
        Some(_) => Err(CoreError::invalid(
            "Custom ID invalid, must be 6-128 bytes.",
        )),
    }
}

/// A custom id to link, in the words of Nakama's link call.
pub(crate) fn linked_custom_id(id: &str) -> Result<(), CoreError> {
    match custom_id_fault(id) {
        None => Ok(()),
        Some(Fault::Missing) => Err(CoreError::invalid("Custom ID is required.")),
        Some(Fault::Characters) => Err(CoreError::invalid(
            "Invalid custom ID, no spaces or control characters allowed.",
        )),
        Some(_) => Err(CoreError::invalid(
            "Invalid custom ID, must be 6-128 bytes.",
        )),
    }
}

/// Validates an email address and returns it lowercased, the form it is stored and looked up in.
pub(crate) fn email(email: &str) -> Result<String, CoreError> {
    match email_fault(email) {
        None => Ok(email.to_lowercase()),
        Some(Fault::Characters) => Err(CoreError::invalid(
            "Invalid email address, no spaces or control characters allowed.",
        )),
        Some(Fault::Format | Fault::Missing) => {
            Err(CoreError::invalid("Invalid email address format."))
        }
        Some(_) => Err(CoreError::invalid(
            "Invalid email address, must be 10-255 bytes.",
        )),
    }
}

/// `^.+@.+\..+$`: something, an `@`, something, a dot, something.
fn looks_like_email(email: &str) -> bool {
    email.char_indices().any(|(at, c)| {
        c == '@' && at > 0 && {
            let domain = &email[at + 1..];
            domain
                .char_indices()
                .any(|(dot, c)| c == '.' && dot > 0 && dot + 1 < domain.len())
        }
    })
}

pub(crate) fn password(password: &str) -> Result<(), CoreError> {
    match password_fault(password) {
        None => Ok(()),
        // bcrypt only reads 72 bytes; accepting more would silently ignore the rest.
        Some(Fault::TooLong) => Err(CoreError::invalid(
            "Password must be at most 72 bytes long.",
        )),
        Some(_) => Err(CoreError::invalid(
            "Password must be at least 8 characters long.",
        )),
    }
}

/// A username given when signing in: Nakama checks the characters, then the length.
pub(crate) fn username(username: &str) -> Result<(), CoreError> {
    username_characters(username)?;
    username_length(username)
}

/// A username given in an account update: Nakama checks the length, then the characters.
pub(crate) fn new_username(username: &str) -> Result<(), CoreError> {
    username_length(username)?;
    username_characters(username)
}

fn username_length(username: &str) -> Result<(), CoreError> {
    if username.is_empty() || username.len() > 128 {
        return Err(CoreError::invalid("Username invalid, must be 1-128 bytes."));
    }
    Ok(())
}

/// Nakama's username rule, exactly: its pattern `([[:cntrl:]]|[[\t\n\r\f\v]])+` refuses
/// ASCII control characters and, through a quirk of its second bracket, the two characters
/// `[]` side by side. Plain spaces (and any other character) are allowed, despite the message.
fn username_characters(username: &str) -> Result<(), CoreError> {
    if !username_characters_ok(username) {
        return Err(CoreError::invalid(
            "Username invalid, no spaces or control characters allowed.",
        ));
    }
    Ok(())
}

fn username_characters_ok(username: &str) -> bool {
    let control = username.bytes().any(|b| b < 0x20 || b == 0x7f);
    !control && !username.contains("[]")
}

/// A profile field of an account update (display name, avatar URL, language tag, location,
/// timezone): no NUL, and no longer than Nakama's column. Nakama fails both with an internal
/// error; MetaFi says what is wrong.
pub(crate) fn profile_field(field: ProfileField, value: &str) -> Result<(), CoreError> {
    let (name, max) = match field {
        ProfileField::DisplayName => ("Display name", MAX_PROFILE_CHARS),
        ProfileField::AvatarUrl => ("Avatar URL", MAX_AVATAR_URL_CHARS),
        ProfileField::LangTag => ("Lang tag", MAX_LANG_TAG_CHARS),
        ProfileField::Location => ("Location", MAX_PROFILE_CHARS),
        ProfileField::Timezone => ("Timezone", MAX_PROFILE_CHARS),
    };
    if value.contains('\0') {
        return Err(CoreError::invalid(format!(
            "{name} invalid, no NUL characters allowed."
        )));
    }
    if longer_than(value, max) {
        return Err(CoreError::invalid(format!(
            "{name} invalid, must be at most {max} characters."
        )));
    }
    Ok(())
}

/// The profile fields of an account update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProfileField {
    DisplayName,
    AvatarUrl,
    LangTag,
    Location,
    Timezone,
}

/// A storage collection and key naming an object: both set (Nakama's check and message), and
/// without NUL characters. Over-long names are left to the operation: they name nothing.
pub(crate) fn object_name(collection: &str, key: &str) -> Result<(), CoreError> {
    if collection.is_empty() || key.is_empty() {
        return Err(CoreError::invalid(
            "Invalid collection or key value supplied. They must be set.",
        ));
    }
    if collection.contains('\0') || key.contains('\0') {
        return Err(CoreError::invalid(
            "Invalid collection or key value supplied. They must not contain NUL characters.",
        ));
    }
    Ok(())
}

/// A storage collection and key to write: [`object_name`], and no longer than Nakama's
/// columns (128 characters each).
pub(crate) fn new_object_name(collection: &str, key: &str) -> Result<(), CoreError> {
    object_name(collection, key)?;
    if longer_than(collection, MAX_COLLECTION_CHARS) || longer_than(key, MAX_KEY_CHARS) {
        return Err(CoreError::invalid(format!(
            "Invalid collection or key value supplied. They must be at most {MAX_KEY_CHARS} characters."
        )));
    }
    Ok(())
}

/// A collection to list: without NUL characters.
pub(crate) fn collection(collection: &str) -> Result<(), CoreError> {
    if collection.contains('\0') {
        return Err(CoreError::invalid(
            "Invalid collection value supplied. It must not contain NUL characters.",
        ));
    }
    Ok(())
}

/// A random username of ten ASCII letters, as Nakama generates when none is given.
pub fn generate_username() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut rng = rand::rng();
    (0..10)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_id_rules() {
        assert!(device_id("abcdefghij").is_ok());
        assert!(device_id("short").is_err());
        assert!(device_id(&"x".repeat(129)).is_err());
        assert!(device_id("has space 12345").is_err());
        assert!(device_id("tab\there12345").is_err());
        assert!(device_id("").is_err());
    }

    #[test]
    fn custom_id_rules() {
        assert!(custom_id("abcdef").is_ok());
        assert!(custom_id("abcde").is_err());
        assert!(custom_id("abc\u{7f}def").is_err());
    }

    #[test]
    fn email_rules_and_lowercasing() {
        assert_eq!(email("Alice@Example.COM").unwrap(), "alice@example.com");
        assert!(email("a@b.c").is_err(), "too short");
        assert!(email("no-at-sign.example.com").is_err());
        assert!(email("alice@nodot").is_err());
        assert!(email("alice@example.").is_err());
        assert!(email("al ice@example.com").is_err());
    }

    #[test]
    fn username_rules() {
        assert!(username("bob").is_ok());
        assert!(username("").is_err());
        assert!(username(&"u".repeat(129)).is_err());
        assert!(username("ünïcødé").is_ok());
        assert!(username("a\tb").is_err());
        assert!(username("a\0b").is_err());
        assert!(username("a\u{7f}b").is_err());
    }

    /// Nakama 3.40 accepts a plain space in a username (its pattern has no `[:space:]` class);
    /// MetaFi refused it.
    #[test]
    fn username_with_plain_space_is_accepted_as_nakama_does() {
        assert!(username("a b").is_ok());
        assert!(new_username("first last").is_ok());
        assert!(
            username("a\u{a0}b").is_ok(),
            "non-ASCII space is not a control"
        );
        // The quirk of Nakama's pattern: `[]` side by side is refused, alone they are fine.
        assert!(username("a[]b").is_err());
        assert!(username("a[b]").is_ok());
    }

    #[test]
    fn username_checks_run_in_nakamas_order() {
        let long_with_tab = format!("\t{}", "u".repeat(200));
        let message = |r: Result<(), CoreError>| r.unwrap_err().client_message().into_owned();
        assert_eq!(
            message(username(&long_with_tab)),
            "Username invalid, no spaces or control characters allowed."
        );
        assert_eq!(
            message(new_username(&long_with_tab)),
            "Username invalid, must be 1-128 bytes."
        );
    }

    #[test]
    fn object_names_refuse_nul_and_overlong_writes() {
        assert!(object_name("c", "k").is_ok());
        assert!(object_name("", "k").is_err());
        assert!(object_name("c\0", "k").is_err());
        assert!(
            object_name("c", &"k".repeat(129)).is_ok(),
            "reads may name anything"
        );
        assert!(new_object_name("c", &"k".repeat(129)).is_err());
        assert!(new_object_name(&"é".repeat(128), &"k".repeat(128)).is_ok());
        assert!(collection("c\0").is_err());
    }

    #[test]
    fn profile_fields_refuse_nul_and_overlong() {
        assert!(profile_field(ProfileField::DisplayName, &"ñ".repeat(255)).is_ok());
        assert!(profile_field(ProfileField::DisplayName, &"n".repeat(256)).is_err());
        assert!(profile_field(ProfileField::LangTag, "en-GB").is_ok());
        assert!(profile_field(ProfileField::LangTag, &"l".repeat(19)).is_err());
        assert!(profile_field(ProfileField::Timezone, "UTC\0").is_err());
    }

    #[test]
    fn generated_usernames_are_valid_and_vary() {
        let a = generate_username();
        let b = generate_username();
        assert_eq!(a.len(), 10);
        assert!(username(&a).is_ok());
        assert_ne!(a, b);
    }

    #[test]
    fn password_length_rules() {
        assert!(password("1234567").is_err());
        assert!(password("12345678").is_ok());
        assert!(password(&"p".repeat(73)).is_err());
    }
}
