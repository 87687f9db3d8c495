//! gRPC status codes, as Nakama puts them in error bodies and realtime error envelopes.

use serde::{Deserialize, Serialize};

/// A gRPC status code. The numbers are part of the wire contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Code {
    /// The number sent on the wire.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// The HTTP status Nakama's gateway answers with for this code.
    pub fn http_status(self) -> u16 {
        match self {
            Code::Ok => 200,
            Code::Cancelled => 499,
            Code::Unknown | Code::Internal | Code::DataLoss => 500,
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
            Code::DeadlineExceeded => 504,
            Code::NotFound => 404,
            Code::AlreadyExists | Code::Aborted => 409,
            Code::PermissionDenied => 403,
            Code::ResourceExhausted => 429,
            Code::Unimplemented => 501,
            Code::Unavailable => 503,
            Code::Unauthenticated => 401,
        }
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.as_i32())
    }
}

/// The JSON body of every REST error: `{"error": …, "code": …, "message": …}`.
///
/// `error` and `message` carry the same text, as in Nakama, so clients that read either work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    pub code: i32,
    pub message: String,
}

impl ErrorBody {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        let message = message.into();
        ErrorBody {
            error: message.clone(),
            code: code.as_i32(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_serializes_like_nakama() {
        let body = ErrorBody::new(Code::Unauthenticated, "Server key invalid");
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"error": "Server key invalid", "code": 16, "message": "Server key invalid"})
        );
    }

    #[test]
    fn http_status_matches_gateway_mapping() {
        assert_eq!(Code::InvalidArgument.http_status(), 400);
        assert_eq!(Code::Unauthenticated.http_status(), 401);
        assert_eq!(Code::PermissionDenied.http_status(), 403);
        assert_eq!(Code::NotFound.http_status(), 404);
        assert_eq!(Code::AlreadyExists.http_status(), 409);
        assert_eq!(Code::ResourceExhausted.http_status(), 429);
        assert_eq!(Code::Internal.http_status(), 500);
    }
}
