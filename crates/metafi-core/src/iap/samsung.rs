//! Samsung Galaxy Store: the purchase id from the Samsung IAP SDK is checked with Samsung's
//! receipt API (`GET /iap/v6/receipt?purchaseID=…`, no credentials), as Nakama 3.40's
//! `iap.ValidateReceiptSamsung`. A receipt whose mode is `TEST` is a sandbox purchase; when
//! `iap.samsung.package_name` is set, the receipt must be for that package.

use serde::Deserialize;

use super::StoreError;
use super::config::SamsungConfig;
use super::http::StoreHttp;

/// The fields of Samsung's receipt MetaFi reads (Nakama's `SamsungPurchaseResponse`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Receipt {
    pub status: String,
    pub mode: String,
    pub package_name: String,
    pub item_id: String,
    pub purchase_date: String,
    pub error_code: i64,
    pub error_message: String,
}

impl Receipt {
    pub(super) fn is_sandbox(&self) -> bool {
        self.mode == "TEST"
    }
}

/// Asks Samsung about `purchase_id`; the receipt and Samsung's answer as text.
pub(super) async fn validate(
    http: &StoreHttp,
    config: &SamsungConfig,
    purchase_id: &str,
) -> Result<(Receipt, String), StoreError> {
    let mut url = reqwest::Url::parse(&config.receipt_url).map_err(|e| {
        StoreError::rejected(format!("failed to build Samsung IAP receipt URL: {e}"))
    })?;
    url.query_pairs_mut().append_pair("purchaseID", purchase_id);
    let answer = http.send(http.get(url.as_str())).await?;
    let status = answer.status;
    let raw = String::from_utf8_lossy(&answer.body).into_owned();
    if status != 200 {
        tracing::debug!(status, payload = %raw, "Samsung IAP answered an error status");
        return Err(StoreError::rejected(format!(
            "Samsung IAP returned HTTP {status}, status={status}"
        )));
    }
    // Nakama adds Samsung's answer to these messages; MetaFi logs it instead (see docs).
    let refused = |reason: String| {
        tracing::debug!(payload = %raw, "{reason}");
        StoreError::rejected(format!("{reason}, status={status}"))
    };
    let receipt: Receipt = serde_json::from_slice(&answer.body)
        .map_err(|e| refused(format!("failed to parse Samsung IAP response: {e}")))?;
    if receipt.status != "success" {
        let message = if receipt.error_message.is_empty() {
            receipt.status.clone()
        } else {
            receipt.error_message.clone()
        };
        return Err(refused(format!(
            "Samsung IAP: purchase validation failed: {message} (errorCode={})",
            receipt.error_code
        )));
    }
    let package = &config.package_name;
    if !package.is_empty() && !receipt.package_name.is_empty() && receipt.package_name != *package {
        return Err(refused(format!(
            "Samsung IAP: package name mismatch (expected {package}, got {})",
            receipt.package_name
        )));
    }
    if receipt.item_id.is_empty() {
        return Err(refused("Samsung IAP response missing itemId".to_owned()));
    }
    Ok((receipt, raw))
}

/// Samsung's `purchaseDate` (`2006-01-02 15:04:05`, UTC) in ms since the epoch; 0 when it is
/// missing or malformed (Nakama: the zero time).
pub(super) fn purchase_time_ms(date: &str) -> i64 {
    parse_date(date).unwrap_or(0)
}

fn parse_date(date: &str) -> Option<i64> {
    let (day, time) = date.split_once(' ')?;
    let mut day = day.splitn(3, '-');
    let year: i64 = number(day.next()?, 4)?;
    let month: i64 = number(day.next()?, 2)?;
    let dom: i64 = number(day.next()?, 2)?;
    let mut time = time.splitn(3, ':');
    let hour: i64 = number(time.next()?, 2)?;
    let minute: i64 = number(time.next()?, 2)?;
    let second: i64 = number(time.next()?, 2)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&dom) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, dom);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}

fn number(text: &str, digits: usize) -> Option<i64> {
    if text.len() != digits || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purchase_dates_are_utc() {
        assert_eq!(purchase_time_ms("1970-01-01 00:00:00"), 0);
        assert_eq!(purchase_time_ms("2023-11-14 22:13:20"), 1_700_000_000_000);
        assert_eq!(purchase_time_ms("2024-02-29 12:00:01"), 1_709_208_001_000);
        for bad in [
            "",
            "2024-02-29",
            "2024-13-01 00:00:00",
            "24-01-01 00:00:00",
            "x",
        ] {
            assert_eq!(purchase_time_ms(bad), 0, "{bad}");
        }
    }
}
