//! Hashes, ciphers, signatures and tokens: `md5_hash`, `sha256_hash`, `hmac_sha256_hash`,
//! `aes128_*`/`aes256_*`, `rsa_sha256_hash`, `bcrypt_hash`/`bcrypt_compare`, `jwt_generate`.
//!
//! Byte-compatible with Nakama: AES is CFB over the whole block with a random 16-byte IV
//! written before the ciphertext, the input padded with spaces to a multiple of four bytes
//! (Lua returns the raw bytes, JavaScript their standard base64), so a ciphertext made by
//! Nakama decrypts here and the other way round. JWTs are built as Go's `jwt` builds them
//! (header `{"alg":…,"typ":"JWT"}`, claims with sorted keys), so the same claims and key give
//! the same token. bcrypt and RSA run on the blocking pool, off the VM thread.

use std::sync::Arc;

use aes::cipher::{AsyncStreamCipher, KeyIvInit};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use md5::{Digest, Md5};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use ring::{digest, hmac};
use tokio::sync::Semaphore;

use super::encoding::{hex_encode, non_empty_bytes};
use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("md5_hash"),
        js: Some("md5Hash"),
        call: NkCall::Sync(md5_hash),
    },
    NkFunction {
        lua: Some("sha256_hash"),
        js: Some("sha256Hash"),
        call: NkCall::Sync(sha256_hash),
    },
    NkFunction {
        lua: Some("hmac_sha256_hash"),
        js: Some("hmacSha256Hash"),
        call: NkCall::Sync(hmac_sha256_hash),
    },
    NkFunction {
        lua: Some("aes128_encrypt"),
        js: Some("aes128Encrypt"),
        call: NkCall::Sync(aes128_encrypt),
    },
    NkFunction {
        lua: Some("aes128_decrypt"),
        js: Some("aes128Decrypt"),
        call: NkCall::Sync(aes128_decrypt),
    },
    NkFunction {
        lua: Some("aes256_encrypt"),
        js: Some("aes256Encrypt"),
        call: NkCall::Sync(aes256_encrypt),
    },
    NkFunction {
        lua: Some("aes256_decrypt"),
        js: Some("aes256Decrypt"),
        call: NkCall::Sync(aes256_decrypt),
    },
    NkFunction {
        lua: Some("rsa_sha256_hash"),
        js: Some("rsaSha256Hash"),
        call: NkCall::Async(rsa_sha256_hash),
    },
    NkFunction {
        lua: Some("bcrypt_hash"),
        js: Some("bcryptHash"),
        call: NkCall::Async(bcrypt_hash),
    },
    NkFunction {
        lua: Some("bcrypt_compare"),
        js: Some("bcryptCompare"),
        call: NkCall::Async(bcrypt_compare),
    },
    NkFunction {
        lua: Some("jwt_generate"),
        js: Some("jwtGenerate"),
        call: NkCall::Async(jwt_generate),
    },
];

const AES_BLOCK: usize = 16;

/// The text to hash: Lua a non-empty string, JavaScript any string.
fn hash_input(args: &NkArgs) -> Result<Vec<u8>, NkError> {
    let arg = args.at(1);
    if args.is_js() {
        return Ok(arg.string("expects string")?.as_bytes().to_vec());
    }
    Ok(non_empty_bytes(&arg, "expects input string")?.to_vec())
}

/// The key: non-empty (Lua `expects key string`, JavaScript `key cannot be empty`).
fn key_input(args: &NkArgs) -> Result<Vec<u8>, NkError> {
    let arg = args.at(2);
    if args.is_js() {
        let key = arg.string("expects string")?;
        if key.is_empty() {
            return Err(arg.error("key cannot be empty"));
        }
        return Ok(key.as_bytes().to_vec());
    }
    Ok(non_empty_bytes(&arg, "expects key string")?.to_vec())
}

fn md5_hash(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = hash_input(&args)?;
    Ok(hex_encode(&Md5::digest(&input)).into())
}

fn sha256_hash(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = hash_input(&args)?;
    Ok(hex_encode(digest::digest(&digest::SHA256, &input).as_ref()).into())
}

/// The raw 32-byte MAC (Lua a binary string, JavaScript an `ArrayBuffer`), as Nakama.
fn hmac_sha256_hash(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = hash_input(&args)?;
    let key = key_input(&args)?;
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), &input);
    Ok(NkValue::Bytes(tag.as_ref().to_vec()))
}

fn aes128_encrypt(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    aes_encrypt(&args, 16)
}

fn aes128_decrypt(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    aes_decrypt(&args, 16)
}

fn aes256_encrypt(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    aes_encrypt(&args, 32)
}

fn aes256_decrypt(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    aes_decrypt(&args, 32)
}

/// `(input, key)`. Lua: input a non-empty string, a bad key an argument error; JavaScript:
/// any string, a bad key a plain error (as Nakama).
fn aes_args(args: &NkArgs, key_size: usize) -> Result<(Vec<u8>, Vec<u8>), NkError> {
    let input = args.at(1);
    let key = args.at(2);
    let message = format!("expects key {key_size} bytes long");
    if args.is_js() {
        let input = input.string("expects string")?.as_bytes().to_vec();
        let key = key.string("expects string")?.as_bytes();
        if key.len() != key_size {
            return Err(NkError::failed(message));
        }
        return Ok((input, key.to_vec()));
    }
    let input = non_empty_bytes(&input, "expects string")?.to_vec();
    match key.value.as_bytes() {
        Some(k) if k.len() == key_size => Ok((input, k.to_vec())),
        _ => Err(key.error(message)),
    }
}

fn aes_encrypt(args: &NkArgs, key_size: usize) -> Result<NkValue, NkError> {
    let (mut input, key) = aes_args(args, key_size)?;
    // Nakama pads with spaces to a multiple of four; decryption keeps them.
    while !input.len().is_multiple_of(4) {
        input.push(b' ');
    }
    let mut out = vec![0u8; AES_BLOCK];
    SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| NkError::failed("error getting iv: no system randomness"))?;
    let iv = out.clone();
    out.extend_from_slice(&input);
    cfb(&key, &iv, &mut out[AES_BLOCK..], Direction::Encrypt)?;
    if args.is_js() {
        Ok(STANDARD.encode(&out).into())
    } else {
        Ok(NkValue::Bytes(out))
    }
}

fn aes_decrypt(args: &NkArgs, key_size: usize) -> Result<NkValue, NkError> {
    let (input, key) = aes_args(args, key_size)?;
    let mut data = if args.is_js() {
        STANDARD
            .decode(&input)
            .map_err(|e| NkError::failed(format!("error decoding cipher text: {e}")))?
    } else {
        input
    };
    if data.len() < AES_BLOCK {
        return Err(NkError::failed("input too short"));
    }
    let mut text = data.split_off(AES_BLOCK);
    cfb(&key, &data, &mut text, Direction::Decrypt)?;
    if args.is_js() {
        Ok(String::from_utf8_lossy(&text).into_owned().into())
    } else {
        Ok(NkValue::Bytes(text))
    }
}

enum Direction {
    Encrypt,
    Decrypt,
}

/// AES in full-block CFB mode (Go's `cipher.NewCFBEncrypter`), in place.
fn cfb(key: &[u8], iv: &[u8], data: &mut [u8], direction: Direction) -> Result<(), NkError> {
    let bad_key = |_| NkError::failed("error creating cipher block: invalid key size");
    match (key.len(), direction) {
        (16, Direction::Encrypt) => cfb_mode::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
            .map_err(bad_key)?
            .encrypt(data),
        (16, Direction::Decrypt) => cfb_mode::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .map_err(bad_key)?
            .decrypt(data),
        (_, Direction::Encrypt) => cfb_mode::Encryptor::<aes::Aes256>::new_from_slices(key, iv)
            .map_err(bad_key)?
            .encrypt(data),
        (_, Direction::Decrypt) => cfb_mode::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .map_err(bad_key)?
            .decrypt(data),
    }
    Ok(())
}

/// `(input, key)`: an RSASSA-PKCS1-v1_5 SHA-256 signature with a PEM PKCS#1 private key
/// (`-----BEGIN RSA PRIVATE KEY-----`, 2048 to 8192 bits); the raw signature bytes.
fn rsa_sha256_hash(nk: Nk, args: NkArgs) -> super::NkFuture {
    let inputs = hash_input(&args).and_then(|input| Ok((input, key_input(&args)?)));
    let permits = nk.utilities().cpu_permits.clone();
    Box::pin(async move {
        let (input, key) = inputs?;
        blocking(permits, move || {
            let der = pem_block(&key).ok_or_else(|| {
                NkError::failed("could not parse private key: no valid blocks found")
            })?;
            let pair = RsaKeyPair::from_der(&der)
                .map_err(|e| NkError::failed(format!("error parsing key: {e}")))?;
            rsa_sign(&pair, &input)
                .map(NkValue::Bytes)
                .map_err(|e| NkError::failed(format!("error signing input: {e}")))
        })
        .await
    })
}

fn rsa_sign(pair: &RsaKeyPair, message: &[u8]) -> Result<Vec<u8>, String> {
    let mut signature = vec![0u8; pair.public().modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        message,
        &mut signature,
    )
    .map_err(|e| e.to_string())?;
    Ok(signature)
}

/// `(input)`: a bcrypt hash (`$2a$`, as Go writes it) at the configured cost.
fn bcrypt_hash(nk: Nk, args: NkArgs) -> super::NkFuture {
    let input = if args.is_js() {
        args.at(1)
            .string("expects string")
            .map(|s| s.as_bytes().to_vec())
    } else {
        non_empty_bytes(&args.at(1), "expects string").map(<[u8]>::to_vec)
    };
    let cost = nk.utilities().config.bcrypt_cost;
    let permits = nk.utilities().cpu_permits.clone();
    Box::pin(async move {
        let input = input?;
        blocking(permits, move || {
            // Go refuses what bcrypt would silently truncate.
            if input.len() > 72 {
                return Err(NkError::failed(
                    "error hashing input: bcrypt: password length exceeds 72 bytes",
                ));
            }
            bcrypt::hash_with_result(&input, cost)
                .map(|parts| parts.format_for_version(bcrypt::Version::TwoA).into())
                .map_err(|e| NkError::failed(format!("error hashing input: {e}")))
        })
        .await
    })
}

/// `(hash, plaintext)`: true when they match; a malformed or short hash is `false` or an
/// error as in Go (`error comparing hash and plaintext: …`).
fn bcrypt_compare(nk: Nk, args: NkArgs) -> super::NkFuture {
    let inputs = (|| {
        let (hash, plain) = (args.at(1), args.at(2));
        if args.is_js() {
            let hash = hash.string("expects string")?;
            let plain = plain.string("expects string")?;
            if hash.is_empty() {
                return Err(args.at(1).error("hash cannot be empty"));
            }
            if plain.is_empty() {
                return Err(args.at(2).error("plaintext cannot be empty"));
            }
            return Ok((hash.to_owned(), plain.as_bytes().to_vec()));
        }
        let hash = hash.non_empty("expects string")?;
        let plain = non_empty_bytes(&plain, "expects string")?;
        Ok((hash.to_owned(), plain.to_vec()))
    })();
    let permits = nk.utilities().cpu_permits.clone();
    Box::pin(async move {
        let (hash, plain) = inputs?;
        // Go's `ErrHashTooShort` is a mismatch, not an error.
        if hash.len() < 59 {
            return Ok(false.into());
        }
        blocking(permits, move || match bcrypt::verify(&plain, &hash) {
            Ok(matches) => Ok(matches.into()),
            Err(e) => Err(NkError::failed(format!(
                "error comparing hash and plaintext: {e}"
            ))),
        })
        .await
    })
}

/// `(algorithm, key, claims)`: `HS256` with a secret, or `RS256` with a PEM PKCS#8 private
/// key; the compact token.
fn jwt_generate(nk: Nk, args: NkArgs) -> super::NkFuture {
    let inputs = jwt_args(&args);
    let permits = nk.utilities().cpu_permits.clone();
    Box::pin(async move {
        let (algorithm, key, claims) = inputs?;
        let header = match algorithm {
            Algorithm::Hs256 => r#"{"alg":"HS256","typ":"JWT"}"#,
            Algorithm::Rs256 => r#"{"alg":"RS256","typ":"JWT"}"#,
        };
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let signature = match algorithm {
            Algorithm::Hs256 => {
                let key = hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes());
                hmac::sign(&key, signing_input.as_bytes()).as_ref().to_vec()
            }
            Algorithm::Rs256 => {
                let message = signing_input.clone();
                blocking(permits, move || {
                    let der = pem_block(key.as_bytes()).ok_or_else(|| {
                        NkError::failed("could not parse private key: no valid blocks found")
                    })?;
                    let pair = RsaKeyPair::from_pkcs8(&der).map_err(|e| {
                        NkError::failed(format!("could not parse private key: {e}"))
                    })?;
                    rsa_sign(&pair, message.as_bytes())
                        .map_err(|e| NkError::failed(format!("failed to sign token: {e}")))
                })
                .await?
            }
        };
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)).into())
    })
}

#[derive(Clone, Copy)]
enum Algorithm {
    Hs256,
    Rs256,
}

/// The algorithm, the key and the claims as Go's `json.Marshal` writes a map.
fn jwt_args(args: &NkArgs) -> Result<(Algorithm, String, String), NkError> {
    let algo = args.at(1);
    let name = if args.is_js() {
        algo.string("expects string")?
    } else {
        algo.non_empty("expects string")?
    };
    let algorithm = match name {
        "HS256" => Algorithm::Hs256,
        "RS256" => Algorithm::Rs256,
        _ => return Err(algo.error("unsupported algo type - only allowed 'HS256', 'RS256'.")),
    };
    let key = args.at(2);
    let key = if args.is_js() {
        match key.string("expects string")? {
            "" => return Err(key.error("signing key cannot be empty")),
            k => k,
        }
    } else {
        key.non_empty("expects string")?
    };
    let claims = args.at(3);
    let message = if args.is_js() {
        "claims must be an object"
    } else {
        "expects table"
    };
    let map = claims.map(message)?;
    let json = NkValue::Map(map.map.clone())
        .to_go_json(super::Naming::Snake)
        .map_err(|e| NkError::failed(format!("failed to sign token: {e}")))?;
    Ok((algorithm, key.to_owned(), go_json(&json)))
}

/// JSON as Go's `json.Marshal` writes it: object keys sorted (`serde_json::Map` is ordered
/// by key), `<`, `>`, `&`, U+2028 and U+2029 escaped. Those characters only occur inside
/// strings, so replacing them in the text is exact.
fn go_json(json: &serde_json::Value) -> String {
    let text = json.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The DER bytes of the first PEM block in `text` (Go's `pem.Decode`), `None` if there is
/// none. Header lines (`Proc-Type: …`) are skipped; encrypted keys are not supported.
fn pem_block(text: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start..];
    let body_start = rest.find('\n')? + 1;
    let body_end = rest.find("-----END ")?;
    if body_end < body_start {
        return None;
    }
    let body: String = rest[body_start..body_end]
        .lines()
        .filter(|line| !line.contains(':'))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    STANDARD.decode(body).ok()
}

/// Runs CPU-heavy work on the blocking pool, at most one per core at once.
async fn blocking<T: Send + 'static>(
    permits: Arc<Semaphore>,
    work: impl FnOnce() -> Result<T, NkError> + Send + 'static,
) -> Result<T, NkError> {
    // The semaphore is never closed; an error would mean the process is going away.
    let _permit = permits
        .acquire_owned()
        .await
        .map_err(|_| NkError::failed("crypto work is shutting down"))?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| NkError::failed(format!("crypto task failed: {e}")))?
}

#[cfg(test)]
mod tests;
