//! Multi-factor authentication for console users, as Nakama does it: time-based one-time
//! passwords (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits, the steps either side of now
//! accepted), an 80-bit secret in base32 shown with its `otpauth://` URL, sixteen 8-digit
//! recovery codes each usable once, and secret and codes stored encrypted (AES-256-GCM with
//! `console.mfa_storage_encryption_key`).

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;

/// Seconds per TOTP step.
const STEP_SECS: i64 = 30;
/// Steps accepted either side of the current one (Nakama's window of 3).
const WINDOW: i64 = 1;
/// The issuer shown by authenticator apps.
pub(crate) const ISSUER: &str = "MetaFi";
const RECOVERY_CODES: usize = 16;

/// Why a code is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodeError {
    /// Not 6 digits (a TOTP) nor 8 digits starting 1-9 (a recovery code).
    Format,
    /// Well formed, but not the current code nor an unused recovery code.
    Invalid,
}

/// What a code turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Accepted {
    Totp,
    /// A recovery code: the codes left afterwards.
    Recovery(Vec<String>),
}

/// A new random 80-bit secret, base32 without padding (Nakama's).
pub(crate) fn new_secret() -> String {
    use rand::Rng as _;
    let bytes: [u8; 10] = rand::rng().random();
    base32_encode(&bytes)
}

/// The provisioning URL an authenticator app reads (usually from a QR code).
pub(crate) fn otpauth_url(secret: &str, username: &str) -> String {
    format!(
        "otpauth://totp/{ISSUER}:{}?issuer={ISSUER}&secret={secret}",
        percent_encode(username)
    )
}

/// Sixteen random 8-digit codes (10000000..99999999).
pub(crate) fn new_recovery_codes() -> Vec<String> {
    use rand::Rng as _;
    let mut rng = rand::rng();
    (0..RECOVERY_CODES)
        .map(|_| rng.random_range(10_000_000u32..100_000_000).to_string())
        .collect()
}

/// The TOTP code of `secret` (base32) for the step containing `unix_secs`.
pub fn totp(secret: &str, unix_secs: i64) -> Option<u32> {
    Some(hotp(
        &base32_decode(secret)?,
        unix_secs.div_euclid(STEP_SECS),
    ))
}

fn hotp(key: &[u8], counter: i64) -> u32 {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key);
    let tag = hmac::sign(&key, &counter.to_be_bytes());
    let digest = tag.as_ref();
    let offset = usize::from(digest[digest.len() - 1] & 0x0f);
    let word = u32::from_be_bytes([
        digest[offset] & 0x7f,
        digest[offset + 1],
        digest[offset + 2],
        digest[offset + 3],
    ]);
    word % 1_000_000
}

/// Checks `code` against `secret` at `unix_secs` and, for an 8-digit code, against the
/// recovery codes (which it then uses up).
pub(crate) fn check(
    secret: &str,
    recovery: &[String],
    code: &str,
    unix_secs: i64,
) -> Result<Accepted, CodeError> {
    let code = code.trim();
    let digits = code.bytes().all(|b| b.is_ascii_digit());
    match code.len() {
        6 if digits => {
            let want: u32 = code.parse().map_err(|_| CodeError::Format)?;
            let key = base32_decode(secret).ok_or(CodeError::Invalid)?;
            let step = unix_secs.div_euclid(STEP_SECS);
            if (step - WINDOW..=step + WINDOW).any(|s| hotp(&key, s) == want) {
                Ok(Accepted::Totp)
            } else {
                Err(CodeError::Invalid)
            }
        }
        8 if digits && !code.starts_with('0') => {
            let Some(at) = recovery.iter().position(|c| c == code) else {
                return Err(CodeError::Invalid);
            };
            let mut left = recovery.to_vec();
            left.remove(at);
            Ok(Accepted::Recovery(left))
        }
        _ => Err(CodeError::Format),
    }
}

/// Encrypts with AES-256-GCM under a 32-byte key: a random nonce, then the sealed text.
pub(crate) fn encrypt(key: &[u8; 32], plain: &[u8]) -> Option<Vec<u8>> {
    use rand::Rng as _;
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).ok()?);
    let nonce: [u8; NONCE_LEN] = rand::rng().random();
    let mut sealed = plain.to_vec();
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::empty(),
        &mut sealed,
    )
    .ok()?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    Some(out)
}

/// The inverse of [`encrypt`]; `None` for a wrong key or damaged text.
pub(crate) fn decrypt(key: &[u8; 32], data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < NONCE_LEN {
        return None;
    }
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).ok()?);
    let (nonce, sealed) = data.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut buffer = sealed.to_vec();
    let plain = key.open_in_place(nonce, Aad::empty(), &mut buffer).ok()?;
    Some(plain.to_vec())
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32, no padding.
pub(crate) fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(BASE32[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(BASE32[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// RFC 4648 base32 (case-insensitive, padding and spaces ignored); `None` on another letter.
pub(crate) fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        if c == b'=' || c == b' ' {
            continue;
        }
        let value = BASE32.iter().position(|&a| a == c.to_ascii_uppercase())?;
        buffer = (buffer << 5) | u32::try_from(value).ok()?;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push(((buffer >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    /// RFC 6238 appendix B's SHA-1 vectors (secret "12345678901234567890"), last 6 digits.
    #[test]
    fn totp_matches_rfc_6238() {
        let secret = base32_encode(b"12345678901234567890");
        assert_eq!(secret, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        for (time, code) in [
            (59, 287_082),
            (1_111_111_109, 81_804),
            (1_111_111_111, 50_471),
            (1_234_567_890, 5_924),
            (2_000_000_000, 279_037),
            (20_000_000_000, 353_130),
        ] {
            assert_eq!(totp(&secret, time), Some(code), "at {time}");
        }
    }

    #[test]
    fn codes_are_accepted_one_step_either_side_and_recovery_codes_once() {
        let secret = "JBSWY3DPEHPK3PXP";
        let now = 1_700_000_000;
        let code = |t: i64| format!("{:06}", totp(secret, t).unwrap());
        assert_eq!(check(secret, &[], &code(now), now), Ok(Accepted::Totp));
        assert_eq!(check(secret, &[], &code(now - 30), now), Ok(Accepted::Totp));
        assert_eq!(check(secret, &[], &code(now + 30), now), Ok(Accepted::Totp));
        assert_eq!(
            check(secret, &[], &code(now - 90), now),
            Err(CodeError::Invalid)
        );
        assert_eq!(check(secret, &[], "12345", now), Err(CodeError::Format));
        assert_eq!(check(secret, &[], "abcdef", now), Err(CodeError::Format));
        assert_eq!(check(secret, &[], "01234567", now), Err(CodeError::Format));
        let codes = vec!["12345678".to_owned(), "87654321".to_owned()];
        assert_eq!(
            check(secret, &codes, "87654321", now),
            Ok(Accepted::Recovery(vec!["12345678".to_owned()]))
        );
        assert_eq!(
            check(secret, &codes, "11111111", now),
            Err(CodeError::Invalid)
        );
        let fresh = new_recovery_codes();
        assert_eq!(fresh.len(), 16);
        assert!(fresh.iter().all(|c| c.len() == 8 && !c.starts_with('0')));
    }

    #[test]
    fn base32_round_trips_and_secrets_are_80_bits() {
        for len in 0..12 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base32_decode(&base32_encode(&bytes)).unwrap(), bytes);
        }
        let secret = new_secret();
        assert_eq!(secret.len(), 16);
        assert_eq!(base32_decode(&secret).unwrap().len(), 10);
        assert_eq!(base32_decode("not base32!"), None);
        assert_eq!(
            otpauth_url("ABC", "ops user"),
            "otpauth://totp/MetaFi:ops%20user?issuer=MetaFi&secret=ABC"
        );
    }

    #[test]
    fn encryption_round_trips_and_refuses_another_key() {
        let key = [7u8; 32];
        let sealed = encrypt(&key, b"secret").unwrap();
        assert_ne!(&sealed[NONCE_LEN..], b"secret");
        assert_eq!(decrypt(&key, &sealed).unwrap(), b"secret");
        assert_eq!(decrypt(&[8u8; 32], &sealed), None);
        assert_eq!(decrypt(&key, &sealed[..5]), None);
        // A fresh nonce each time.
        assert_ne!(encrypt(&key, b"secret").unwrap(), sealed);
    }
}
