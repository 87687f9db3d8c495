//! Input rules for identities and usernames, the same as Nakama's so that an id one server
//! accepts the other accepts too.

use crate::CoreError;

/// ASCII control characters and ASCII whitespace, as POSIX `[[:cntrl:]]|[[:space:]]` in Go's
/// regexp (ASCII-only classes).
fn has_control_or_space(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 || b == 0x7f || b == b' ')
}

pub(crate) fn device_id(id: &str) -> Result<(), CoreError> {
    if id.is_empty() {
        return Err(CoreError::invalid("Device ID is required."));
    }
    if has_control_or_space(id) {
        return Err(CoreError::invalid(
            "Device ID invalid, no spaces or control characters allowed.",
        ));
    }
    if !(10..=128).contains(&id.len()) {
        return Err(CoreError::invalid(
            "Device ID invalid, must be 10-128 bytes.",
        ));
    }
    Ok(())
}

pub(crate) fn custom_id(id: &str) -> Result<(), CoreError> {
    if id.is_empty() {
        return Err(CoreError::invalid("Custom ID is required."));
    }
    if has_control_or_space(id) {
        return Err(CoreError::invalid(
            "Custom ID invalid, no spaces or control characters allowed.",
        ));
    }
    if !(6..=128).contains(&id.len()) {
        return Err(CoreError::invalid(
            "Custom ID invalid, must be 6-128 bytes.",
        ));
    }
    Ok(())
}

/// Validates an email address and returns it lowercased, the form it is stored and looked up in.
pub(crate) fn email(email: &str) -> Result<String, CoreError> {
    if has_control_or_space(email) {
        return Err(CoreError::invalid(
            "Invalid email address, no spaces or control characters allowed.",
        ));
    }
    if !looks_like_email(email) {
        return Err(CoreError::invalid("Invalid email address format."));
    }
    if !(10..=255).contains(&email.len()) {
        return Err(CoreError::invalid(
            "Invalid email address, must be 10-255 bytes.",
        ));
    }
    Ok(email.to_lowercase())
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
    if password.len() < 8 {
        return Err(CoreError::invalid(
            "Password must be at least 8 characters long.",
        ));
    }
    // bcrypt only reads 72 bytes; accepting more would silently ignore the rest.
    if password.len() > 72 {
        return Err(CoreError::invalid(
            "Password must be at most 72 bytes long.",
        ));
    }
    Ok(())
}

pub(crate) fn username(username: &str) -> Result<(), CoreError> {
    if username.is_empty() || username.len() > 128 {
        return Err(CoreError::invalid("Username invalid, must be 1-128 bytes."));
    }
    if has_control_or_space(username) {
        return Err(CoreError::invalid(
            "Username invalid, no spaces or control characters allowed.",
        ));
    }
    Ok(())
}

/// A random username of ten ASCII letters, as Nakama generates when none is given.
pub(crate) fn generate_username() -> String {
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
        assert!(username("a b").is_err());
        assert!(username(&"u".repeat(129)).is_err());
        assert!(username("ünïcødé").is_ok());
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
