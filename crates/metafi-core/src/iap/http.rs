//! Calls to the stores: one shared client, a deadline per call, answers read up to a bound.

use std::time::Duration;

use super::StoreError;

/// A store's HTTP answer.
pub(super) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// The client every store call goes through (the same `reqwest` stack as `nk.http_request`).
#[derive(Debug, Clone)]
pub(super) struct StoreHttp {
    client: reqwest::Client,
    max_bytes: usize,
}

impl StoreHttp {
    pub(super) fn new(timeout: Duration, max_bytes: usize) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()?;
        Ok(StoreHttp { client, max_bytes })
    }

    pub(super) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, StoreError> {
        let mut response = request.send().await.map_err(StoreError::transport)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(StoreError::transport)? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(StoreError::TooLarge {
                    max: self.max_bytes,
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, body })
    }

    pub(super) fn post(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.post(url)
    }

    pub(super) fn get(&self, url: &str) -> reqwest::RequestBuilder {
        self.client.get(url)
    }
}
