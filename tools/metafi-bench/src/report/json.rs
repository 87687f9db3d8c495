//! `report.json`: the whole report, for scripts and for comparing runs.

use anyhow::Context;

use super::Report;

pub fn render(report: &Report) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(report).context("rendering the JSON report")?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_carries_the_columns_and_the_timeline() {
        let report = crate::report::fixture::report();
        let value: serde_json::Value =
            serde_json::from_str(&render(&report).expect("renders")).expect("valid JSON");
        assert_eq!(value["workload"], "auth");
        assert_eq!(value["requests"][0]["name"], "authenticate");
        assert_eq!(value["requests"][0]["count"], 120);
        assert!((value["requests"][0]["mean_ms"].as_f64().expect("number") - 2.0).abs() < 0.01);
        assert_eq!(value["errors"]["status 500"], 1);
        assert_eq!(value["timeline"].as_array().expect("array").len(), 12);
        assert_eq!(value["network"]["sent_total_bytes"], 12_000);
    }
}
