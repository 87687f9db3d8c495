//! RS256 id tokens checked against a provider's JSON Web Key Set (Apple, Google, Facebook
//! Limited Login), fetched on first use and again once `keys_refresh` has passed (a sign-in
//! with a key id not yet known also refetches, at most once per minute, so a rotated key is
//! found without waiting for the refresh).

use std::collections::HashMap;
use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parking_lot::RwLock;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::VerifyError;
use super::fetch::Fetcher;

/// Least time between two fetches of a key set caused by an unknown key id.
const UNKNOWN_KID_REFETCH_MS: i64 = 60_000;

/// The claims of a verified token.
pub(crate) type Claims = Map<String, Value>;

/// One provider's key set and when it is fetched again.
#[derive(Debug)]
pub(crate) struct KeySet {
    provider: &'static str,
    url: String,
    refresh_ms: i64,
    cached: RwLock<Option<Cached>>,
    /// Serializes fetches: concurrent sign-ins wait for one fetch instead of each making one.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Debug, Clone)]
struct Cached {
    keys: Arc<HashMap<String, DecodingKey>>,
    fetched_at_ms: i64,
}

#[derive(Deserialize)]
struct Jwks {
    #[serde(default)]
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    #[serde(default)]
    kty: String,
    #[serde(default)]
    kid: String,
    #[serde(default, rename = "use")]
    usage: String,
    #[serde(default)]
    alg: String,
    #[serde(default)]
    n: String,
    #[serde(default)]
    e: String,
}

impl KeySet {
    pub(crate) fn new(provider: &'static str, url: String, refresh_ms: i64) -> Self {
        KeySet {
            provider,
            url,
            refresh_ms,
            cached: RwLock::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// Verifies an RS256 token signed by one of the set's keys and answers its claims. The
    /// signature, `exp` (required when `exp_required`) and `nbf` are checked here; the issuer
    /// and audience by the caller.
    pub(crate) async fn verify(
        &self,
        fetcher: &Fetcher,
        token: &str,
        now_ms: i64,
        exp_required: bool,
    ) -> Result<Claims, VerifyError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| VerifyError::invalid(format!("malformed token: {e}")))?;
        if header.alg != Algorithm::RS256 {
            return Err(VerifyError::invalid(format!(
                "unexpected algorithm {:?}",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| VerifyError::invalid("missing kid"))?;
        let keys = self.keys(fetcher, now_ms, Some(&kid)).await?;
        let key = keys
            .get(&kid)
            .ok_or_else(|| VerifyError::invalid(format!("unknown kid {kid}")))?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<Claims>(token, key, &validation)
            .map_err(|e| VerifyError::invalid(format!("bad signature or claims: {e}")))?;
        let claims = data.claims;
        let now_s = now_ms.div_euclid(1000);
        match number_claim(&claims, "exp")? {
            Some(exp) if exp < now_s => return Err(VerifyError::invalid("token expired")),
            None if exp_required => return Err(VerifyError::invalid("token has no exp")),
            _ => {}
        }
        if let Some(nbf) = number_claim(&claims, "nbf")?
            && nbf > now_s
        {
            return Err(VerifyError::invalid("token not valid yet"));
        }
        Ok(claims)
    }

    /// The current keys, fetched when none are cached, they are stale, or `kid` is unknown.
    async fn keys(
        &self,
        fetcher: &Fetcher,
        now_ms: i64,
        kid: Option<&str>,
    ) -> Result<Arc<HashMap<String, DecodingKey>>, VerifyError> {
        let fresh = |cached: &Option<Cached>| -> Option<Arc<HashMap<String, DecodingKey>>> {
            let cached = cached.as_ref()?;
            let age = now_ms - cached.fetched_at_ms;
            if age >= self.refresh_ms || age < 0 {
                return None;
            }
            let known = kid.is_none_or(|k| cached.keys.contains_key(k));
            (known || age < UNKNOWN_KID_REFETCH_MS).then(|| Arc::clone(&cached.keys))
        };
        if let Some(keys) = fresh(&self.cached.read()) {
            return Ok(keys);
        }
        let _fetching = self.fetching.lock().await;
        // Another sign-in may have fetched while this one waited.
        if let Some(keys) = fresh(&self.cached.read()) {
            return Ok(keys);
        }
        let body = fetcher.get(self.provider, &self.url).await?;
        let keys = Arc::new(parse_jwks(&body)?);
        *self.cached.write() = Some(Cached {
            keys: Arc::clone(&keys),
            fetched_at_ms: now_ms,
        });
        Ok(keys)
    }
}

/// The usable RSA keys of a key set (Nakama's rule: every field present; others skipped).
fn parse_jwks(body: &[u8]) -> Result<HashMap<String, DecodingKey>, VerifyError> {
    let jwks: Jwks = serde_json::from_slice(body)
        .map_err(|e| VerifyError::invalid(format!("malformed key set: {e}")))?;
    let keys: HashMap<_, _> = jwks
        .keys
        .into_iter()
        .filter(|k| {
            ![&k.kty, &k.kid, &k.usage, &k.alg, &k.n, &k.e]
                .iter()
                .any(|f| f.is_empty())
                && k.kty == "RSA"
                && k.alg == "RS256"
        })
        .filter_map(|k| {
            let key = DecodingKey::from_rsa_components(&k.n, &k.e).ok()?;
            Some((k.kid, key))
        })
        .collect();
    if keys.is_empty() {
        return Err(VerifyError::invalid("no valid key in the key set"));
    }
    Ok(keys)
}

/// A numeric claim, also accepted as a decimal string (as Nakama reads Google's).
pub(crate) fn number_claim(claims: &Claims, name: &str) -> Result<Option<i64>, VerifyError> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| VerifyError::invalid(format!("{name} claim invalid"))),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| VerifyError::invalid(format!("{name} claim invalid"))),
        Some(_) => Err(VerifyError::invalid(format!("{name} claim invalid"))),
    }
}

/// A string claim: `None` when absent, an error when present with another type.
pub(crate) fn string_claim<'a>(
    claims: &'a Claims,
    name: &str,
) -> Result<Option<&'a str>, VerifyError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(VerifyError::invalid(format!("{name} claim invalid"))),
    }
}

/// Whether the token's `aud` (a string or a list) names one of `allowed`.
pub(crate) fn audience_matches(claims: &Claims, allowed: &[String]) -> bool {
    match claims.get("aud") {
        Some(Value::String(aud)) => allowed.iter().any(|a| a == aud),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .any(|aud| allowed.iter().any(|a| a == aud)),
        _ => false,
    }
}
