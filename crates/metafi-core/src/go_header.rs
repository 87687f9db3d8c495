//! Header names as Nakama's Go code sees them: Go's `net/http` keeps header names in their
//! canonical form (`textproto.CanonicalMIMEHeaderKey`), so server code reads
//! `ctx.headers["Content-Type"]` and `http_request`'s answer headers the same way. One rule for
//! every place MetaFi hands header names to scripts.

/// `content-type` → `Content-Type`, `x-api-KEY` → `X-Api-Key`: the first letter and each
/// letter after a `-` upper case, every other letter lower case. (Go leaves a name with a byte
/// that is not a token character as it is; header names that reach here were already
/// validated as tokens by the HTTP library.)
pub fn canonical_header_key(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::canonical_header_key;

    #[test]
    fn names_are_written_as_go_writes_them() {
        for (name, go) in [
            ("content-type", "Content-Type"),
            ("authorization", "Authorization"),
            ("x-api-KEY", "X-Api-Key"),
            ("grpc-timeout", "Grpc-Timeout"),
            ("a--b", "A--B"),
            ("x1-2y", "X1-2y"),
        ] {
            assert_eq!(canonical_header_key(name), go);
        }
    }
}
