//! GETs to identity providers, with the timeout and response size limit of the configuration
//! (the same HTTP client library and limits as `nk.http_request`). Redirects are not followed:
//! a provider endpoint answers itself, and a Game Center key URL must not lead elsewhere.

use std::time::Duration;

/// Why a provider call gave no usable answer. Never shown to clients (they get the
/// provider's "Could not authenticate" message); logged.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("request to {provider} failed: {reason}")]
    Transport {
        provider: &'static str,
        reason: String,
    },
    #[error("{provider} answered status {status}")]
    Status { provider: &'static str, status: u16 },
    #[error("{provider} answered more than {max} bytes")]
    TooLarge { provider: &'static str, max: usize },
}

/// A shared HTTP client with the limits every provider call has.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    timeout: Duration,
    max_bytes: usize,
}

impl Fetcher {
    pub(crate) fn new(timeout: Duration, max_bytes: usize) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()?;
        Ok(Fetcher {
            client,
            timeout,
            max_bytes,
        })
    }

    /// The body of a 200 answer.
    pub(crate) async fn get(
        &self,
        provider: &'static str,
        url: &str,
    ) -> Result<Vec<u8>, FetchError> {
        let transport = |e: reqwest::Error| FetchError::Transport {
            provider,
            reason: e.without_url().to_string(),
        };
        let mut response = self
            .client
            .get(url)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(FetchError::Status { provider, status });
        }
        let too_large = FetchError::TooLarge {
            provider,
            max: self.max_bytes,
        };
        if response
            .content_length()
            .is_some_and(|n| n > self.max_bytes as u64)
        {
            return Err(too_large);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(too_large);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}
