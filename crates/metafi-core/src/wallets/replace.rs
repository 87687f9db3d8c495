//! The console's wallet edit (Nakama's console `UpdateAccount`, `server/console_account.go`):
//! the wallet JSON is replaced outright, with no ledger row, in the same statement as the
//! rest of the account update. This is the rule, in Nakama's words; the console calls it and
//! `Accounts` checks it again for every update that carries a wallet.

use metafi_storage::Balances;

use crate::CoreError;

/// Nakama's refusal of a wallet that is not a flat JSON object of integers.
pub const NOT_A_WALLET: &str =
    "Wallet must be a valid JSON object with only string keys and integer values.";

/// A wallet as the console's `UpdateAccountRequest.wallet` gives it: a JSON object of
/// integer balances (no nesting, no fractions, within int64), none below zero.
///
/// Nakama unmarshals into `map[string]int64`, which also takes `null` (and then stores the
/// text `null` as the wallet); MetaFi refuses it as not an object.
pub fn parse_wallet(text: &str) -> Result<Balances, CoreError> {
    let balances: Balances =
        serde_json::from_str(text).map_err(|_| CoreError::invalid(NOT_A_WALLET))?;
    check_wallet(&balances)?;
    Ok(balances)
}

/// No balance below zero: `Wallet rejected negative value at path '…'.` naming the first
/// such key in key order (Nakama names whichever its map iteration meets first).
pub fn check_wallet(balances: &Balances) -> Result<(), CoreError> {
    match balances.iter().find(|(_, value)| **value < 0) {
        Some((path, _)) => Err(CoreError::invalid(format!(
            "Wallet rejected negative value at path '{path}'."
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: CoreError) -> String {
        match e {
            CoreError::InvalidArgument { message } => message.into_owned(),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn a_flat_object_of_non_negative_integers_is_a_wallet() {
        let wallet = parse_wallet(r#" {"gold": 10, "gems": 0, "big": 9223372036854775807} "#)
            .expect("wallet");
        assert_eq!(
            wallet.into_iter().collect::<Vec<_>>(),
            vec![
                ("big".to_owned(), i64::MAX),
                ("gems".to_owned(), 0),
                ("gold".to_owned(), 10)
            ]
        );
        assert!(parse_wallet("{}").expect("empty").is_empty());
    }

    #[test]
    fn anything_else_is_refused_with_nakamas_text() {
        for text in [
            "",
            "null",
            "[]",
            "1",
            r#""gold""#,
            r#"{"gold": 1.5}"#,
            r#"{"gold": 1e3}"#,
            r#"{"gold": "1"}"#,
            r#"{"gold": {"bars": 1}}"#,
            r#"{"gold": 9223372036854775808}"#,
            r#"{"gold": 1} trailing"#,
            r#"{"gold": null}"#,
        ] {
            let e = parse_wallet(text).expect_err(text);
            assert_eq!(message(e), NOT_A_WALLET, "{text}");
        }
    }

    #[test]
    fn a_negative_balance_is_named() {
        let e = parse_wallet(r#"{"gold": 1, "gems": -1, "zinc": -2}"#).expect_err("negative");
        assert_eq!(message(e), "Wallet rejected negative value at path 'gems'.");
    }
}
