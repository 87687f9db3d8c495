//! The `cron_next`/`cron_prev` rows (the schedules themselves are tested in `metafi_core::cron`).

use super::*;
use crate::nk_api::test_support::{js, lua};

#[tokio::test]
async fn rows_take_nakamas_arguments() {
    assert_eq!(
        lua(
            "cron_next",
            vec!["0 0 * * *".into(), 1_700_000_000i64.into()]
        )
        .await,
        Ok(1_700_006_400i64.into())
    );
    assert_eq!(
        js(
            "cronPrev",
            vec!["0 0 * * *".into(), 1_700_000_000i64.into()]
        )
        .await,
        Ok(1_699_920_000i64.into())
    );
    assert_eq!(
        lua("cron_next", vec!["nope".into(), 1i64.into()]).await,
        Err(NkError::Arg {
            position: 1,
            message: "expects a valid cron string".into()
        })
    );
    assert_eq!(
        lua("cron_next", vec!["* * * * *".into(), 0i64.into()]).await,
        Err(NkError::Arg {
            position: 2,
            message: "expects timestamp in seconds".into()
        })
    );
    assert_eq!(
        js("cronNext", vec!["* * * * *".into(), "x".into()]).await,
        Err(NkError::Arg {
            position: 2,
            message: "expects number".into()
        })
    );
}
