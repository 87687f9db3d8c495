//! `http_request(url, method, headers, body, timeout_ms = 5000, insecure = false)`: an
//! outgoing HTTP or HTTPS request, as Nakama's.
//!
//! Lua gets three results `(code, headers, body)` with one value per header; JavaScript one
//! object `{code, headers, body}` with a list of values per header. Header names are written
//! as Go writes them (`Content-Type`). Only `http` and `https` URLs are served; redirects are
//! followed (at most 10, as Go). Beyond Nakama: the response body is read up to
//! `runtime.http_request_max_bytes`, past which the call fails instead of buffering it.

use std::sync::OnceLock;
use std::time::Duration;

use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("http_request"),
    js: Some("httpRequest"),
    call: NkCall::Async(http_request),
}];

/// Nakama's default timeout, also used for a timeout of 0 or less.
const DEFAULT_TIMEOUT_MS: i64 = 5_000;

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

/// The two HTTP clients (certificates checked or not), built on first use and shared by every
/// call so connections are reused.
#[derive(Debug, Default)]
pub struct HttpClients {
    checked: OnceLock<reqwest::Client>,
    unchecked: OnceLock<reqwest::Client>,
}

impl HttpClients {
    fn client(&self, insecure: bool) -> Result<reqwest::Client, NkError> {
        let slot = if insecure {
            &self.unchecked
        } else {
            &self.checked
        };
        if let Some(client) = slot.get() {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(10))
            .danger_accept_invalid_certs(insecure)
            .build()
            .map_err(|e| NkError::failed(format!("HTTP request error: {e}")))?;
        Ok(slot.get_or_init(|| client).clone())
    }
}

/// What one call asks for, checked before any IO.
struct Request {
    url: reqwest::Url,
    method: reqwest::Method,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    timeout: Duration,
    insecure: bool,
}

fn http_request(nk: Nk, args: NkArgs) -> NkFuture {
    let request = parse(&args);
    let js = args.is_js();
    let max_bytes = nk.utilities().config.http_request_max_bytes;
    Box::pin(async move {
        let request = request?;
        let client = nk.utilities().http.client(request.insecure)?;
        let shown = format!("{} \"{}\"", go_method(&request.method), request.url);
        let mut builder = client
            .request(request.method, request.url)
            .timeout(request.timeout);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let mut response = builder
            .send()
            .await
            .map_err(|e| NkError::failed(format!("HTTP request error: {shown}: {}", reason(&e))))?;
        let code = i64::from(response.status().as_u16());
        if response
            .content_length()
            .is_some_and(|n| n > max_bytes as u64)
        {
            return Err(too_large(max_bytes));
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > max_bytes {
                        return Err(too_large(max_bytes));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(NkError::failed(format!(
                        "HTTP response body error: {}",
                        reason(&e)
                    )));
                }
            }
        }
        let headers = response_headers(response.headers(), js);
        Ok(if js {
            NkValue::Map(
                NkMap::new()
                    .with("code", code)
                    .with("headers", headers)
                    .with("body", String::from_utf8_lossy(&body).into_owned()),
            )
        } else {
            let body = match String::from_utf8(body) {
                Ok(text) => NkValue::Str(text),
                Err(e) => NkValue::Bytes(e.into_bytes()),
            };
            NkValue::Multi(vec![code.into(), headers, body])
        })
    })
}

fn parse(args: &NkArgs) -> Result<Request, NkError> {
    let js = args.is_js();
    let url = args.at(1).string("expects string")?;
    let method = args.at(2).string("expects string")?.to_ascii_uppercase();
    let header_arg = args.at(3);
    let headers = if js {
        header_arg.opt_map("expects object with string keys and values")?
    } else {
        Some(header_arg.map("expects table")?)
    };
    let body = args
        .at(4)
        .opt_string("expects string")?
        .filter(|b| !b.is_empty());
    let timeout_ms = args
        .at(5)
        .opt_integer("expects number")?
        .filter(|ms| *ms > 0)
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    let insecure = args.at(6).opt_bool("expects boolean")?.unwrap_or(false);
    if url.is_empty() {
        return Err(args.at(1).error(if js {
            "URL string cannot be empty."
        } else {
            "expects URL string"
        }));
    }
    if !METHODS.contains(&method.as_str()) {
        return Err(args.at(2).error(if js {
            "Invalid method must be one of: 'get', 'post', 'put', 'patch', 'delete', 'head'."
        } else {
            "expects method to be one of: 'get', 'post', 'put', 'patch', 'delete', 'head'"
        }));
    }
    let invalid = |reason: String| {
        NkError::failed(if js {
            format!("HTTP request is invalid: {reason}")
        } else {
            format!("HTTP request error: {reason}")
        })
    };
    let url = reqwest::Url::parse(url).map_err(|e| invalid(format!("parse \"{url}\": {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(NkError::failed(format!(
            "HTTP request error: unsupported protocol scheme \"{}\"",
            url.scheme()
        )));
    }
    let method =
        reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| invalid(e.to_string()))?;
    let mut header_list = Vec::new();
    if let Some(headers) = headers {
        for (name, value) in headers.map.iter() {
            let value = value
                .as_str()
                .ok_or_else(|| NkError::failed("HTTP header values must be strings"))?;
            header_list.push((
                name.spelled(super::Naming::Snake).into_owned(),
                value.to_owned(),
            ));
        }
    }
    Ok(Request {
        url,
        method,
        headers: header_list,
        body: body.map(|b| b.as_bytes().to_vec()),
        timeout: Duration::from_millis(timeout_ms.unsigned_abs()),
        insecure,
    })
}

/// Lua: `{Name = first value}`; JavaScript: `{Name: [values]}`. Names in Go's canonical form.
fn response_headers(headers: &reqwest::header::HeaderMap, js: bool) -> NkValue {
    let mut out = NkMap::with_capacity(headers.keys_len());
    for name in headers.keys() {
        let values = headers
            .get_all(name)
            .iter()
            .map(|v| NkValue::Str(String::from_utf8_lossy(v.as_bytes()).into_owned()));
        let value = if js {
            NkValue::List(values.collect())
        } else {
            values.into_iter().next().unwrap_or_default()
        };
        out.insert_data(metafi_core::canonical_header_key(name.as_str()), value);
    }
    NkValue::Map(out)
}

/// `Get`, `Post`, … as Go names the method in its errors.
fn go_method(method: &reqwest::Method) -> String {
    let name = method.as_str();
    let mut out = name[..1].to_owned();
    out.push_str(&name[1..].to_ascii_lowercase());
    out
}

/// The cause of a client error, as Go would put it where it can.
fn reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "context deadline exceeded".to_owned();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

fn too_large(max_bytes: usize) -> NkError {
    NkError::failed(format!(
        "HTTP response body error: the body exceeds {max_bytes} bytes (runtime.http_request_max_bytes)"
    ))
}

#[cfg(test)]
mod tests;
