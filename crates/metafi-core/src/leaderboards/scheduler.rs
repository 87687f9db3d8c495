//! Resets: when a board's period ends, its records stay (readable with an expiry override)
//! and writes go to the next period on their own (the expiry is computed per write); what
//! is left to do is to tell server code (`register_leaderboard_reset`) and to forget the
//! ended period's ranks. The task sleeps until the earliest period end of any board and wakes
//! early when boards are created or deleted.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::task::JoinHandle;

use super::{Board, Leaderboards};

/// Server code called when a leaderboard's period ends (Nakama's leaderboard reset hook).
#[async_trait]
pub trait ResetListener: Send + Sync {
    /// `board` as it is now; `reset` the Unix second the period ended.
    async fn leaderboard_reset(&self, board: Arc<Board>, reset: i64);
}

/// The longest sleep between checks, so a clock change is noticed within a minute.
const MAX_SLEEP_S: i64 = 60;

impl Leaderboards {
    /// The leaderboards (not tournaments) whose period ended in `(from_s, to_s]`, each with
    /// the end of its first such period.
    pub fn due_resets(&self, from_s: i64, to_s: i64) -> Vec<(Arc<Board>, i64)> {
        self.boards
            .read()
            .ordered
            .iter()
            .filter(|b| !b.row.is_tournament())
            .filter_map(|b| {
                let end = b.schedule.as_ref()?.next_after(from_s)?;
                (end <= to_s).then(|| (Arc::clone(b), end))
            })
            .collect()
    }

    /// The earliest period end after `now_s` of any board, if any.
    pub fn next_reset_after(&self, now_s: i64) -> Option<i64> {
        self.boards
            .read()
            .ordered
            .iter()
            .filter_map(|b| b.schedule.as_ref()?.next_after(now_s))
            .min()
    }
}

/// Starts the reset task; abort the handle to stop it.
pub fn spawn_scheduler(
    service: Arc<Leaderboards>,
    listener: Option<Arc<dyn ResetListener>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut checked = service.now_secs();
        loop {
            let now = service.now_secs();
            let wait = service
                .next_reset_after(checked)
                .map_or(MAX_SLEEP_S, |next| (next - now).clamp(0, MAX_SLEEP_S));
            let notified = service.changed.notified();
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(wait.unsigned_abs())) => {}
                () = notified => {}
            }
            let now = service.now_secs();
            if now <= checked {
                continue;
            }
            let due = service.due_resets(checked, now);
            checked = now;
            service.trim_expired_ranks();
            if due.is_empty() {
                continue;
            }
            tracing::info!(count = due.len(), "leaderboard periods ended");
            if let Some(listener) = &listener {
                for (board, reset) in due {
                    listener.leaderboard_reset(board, reset).await;
                }
            }
        }
    })
}
