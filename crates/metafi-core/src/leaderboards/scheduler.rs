//! Resets: when a board's period ends, its records stay (readable with an expiry override)
//! and writes go to the next period on their own (the expiry is computed per write); what
//! is left to do is to tell server code (`register_leaderboard_reset`) and to forget the
//! ended period's ranks. Tournaments have two events (Nakama's scheduler): the end of an
//! active window (`register_tournament_end`) and the end of a period
//! (`register_tournament_reset`, after the tournament's size is set back to 0 for the next
//! period). The task sleeps until the earliest event of any board and wakes early when
//! boards are created or deleted.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::task::JoinHandle;

use super::{Board, Leaderboards, TournamentView};

/// Server code called when a leaderboard's period ends (Nakama's leaderboard reset hook) and
/// when a tournament's active window or period ends (its end and reset hooks).
#[async_trait]
pub trait ResetListener: Send + Sync {
    /// `board` as it is now; `reset` the Unix second the period ended.
    async fn leaderboard_reset(&self, board: Arc<Board>, reset: i64);

    /// A tournament's active window ended: the tournament as it was a second before, its
    /// `end_active` and `next_reset` (Nakama's `fnTournamentEnd(tournament, end, reset)`).
    async fn tournament_end(&self, tournament: TournamentView, end: i64, reset: i64) {
        let _ = (tournament, end, reset);
    }

    /// A tournament's period ended (records expire, the size starts over): as
    /// [`ResetListener::tournament_end`], for Nakama's `fnTournamentReset`.
    async fn tournament_reset(&self, tournament: TournamentView, end: i64, reset: i64) {
        let _ = (tournament, end, reset);
    }
}

/// Which tournament event happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TournamentEvent {
    /// The active window ended.
    End,
    /// The period ended.
    Reset,
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

    /// The earliest event after `now_s` of any board (a leaderboard's period end, a
    /// tournament's window or period end), if any.
    pub fn next_reset_after(&self, now_s: i64) -> Option<i64> {
        self.boards
            .read()
            .ordered
            .iter()
            .filter_map(|b| {
                if b.row.is_tournament() {
                    if b.row.end_time > 0 && b.row.end_time < now_s {
                        return None;
                    }
                    let d = b.deadlines(now_s);
                    [d.end_active, d.expiry]
                        .into_iter()
                        .filter(|t| *t > now_s)
                        .min()
                } else {
                    b.schedule.as_ref()?.next_after(now_s)
                }
            })
            .min()
    }

    /// The tournament events in `(from_s, to_s]`, each with its time, in time order.
    pub fn due_tournament_events(
        &self,
        from_s: i64,
        to_s: i64,
    ) -> Vec<(Arc<Board>, TournamentEvent, i64)> {
        let mut due: Vec<(Arc<Board>, TournamentEvent, i64)> = Vec::new();
        for board in self
            .boards
            .read()
            .ordered
            .iter()
            .filter(|b| b.row.is_tournament())
        {
            if board.row.end_time > 0 && board.row.end_time < from_s {
                // Ended for good before this check.
                continue;
            }
            let d = board.deadlines(from_s);
            if d.end_active > from_s && d.end_active <= to_s {
                due.push((Arc::clone(board), TournamentEvent::End, d.end_active));
            }
            if d.expiry > from_s && d.expiry <= to_s {
                due.push((Arc::clone(board), TournamentEvent::Reset, d.expiry));
            }
        }
        due.sort_by_key(|(_, event, at)| (*at, *event == TournamentEvent::Reset));
        due
    }

    /// Handles one tournament event: the tournament as it was a second before `at` (its size
    /// read before a reset clears it), the size cleared at a reset, then the listener.
    pub async fn fire_tournament_event(
        &self,
        board: Arc<Board>,
        event: TournamentEvent,
        at: i64,
        listener: Option<&dyn ResetListener>,
    ) {
        if listener.is_none() && event == TournamentEvent::End {
            return;
        }
        let view = match self.view_at(Arc::clone(&board), at - 1).await {
            Ok(view) => view,
            Err(error) => {
                tracing::error!(%error, tournament = %board.row.id, "could not read a tournament for its scheduled event");
                return;
            }
        };
        if event == TournamentEvent::Reset
            && let Err(error) = self.store.reset_tournament_size(&board.row.id).await
        {
            tracing::error!(%error, tournament = %board.row.id, "could not reset a tournament's size");
        }
        let Some(listener) = listener else {
            return;
        };
        let (end, reset) = (view.end_active, view.next_reset);
        match event {
            TournamentEvent::End => listener.tournament_end(view, end, reset).await,
            TournamentEvent::Reset => listener.tournament_reset(view, end, reset).await,
        }
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
            let events = service.due_tournament_events(checked, now);
            checked = now;
            service.trim_expired_ranks();
            for (board, event, at) in events {
                service
                    .fire_tournament_event(board, event, at, listener.as_deref())
                    .await;
            }
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
