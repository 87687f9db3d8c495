//! The audit log: every change made through the console, with who made it and when.

use axum::Json;
use axum::extract::{Query, State};
use metafi_api::ApiError;
use metafi_storage::AuditEntry;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::{ConsoleSession, Session};
use crate::{ConsoleState, Perm};

/// Longest detail kept per entry, in bytes (a storage write's value may be large).
const MAX_DETAIL_BYTES: usize = 4096;

/// Records a change. The change has happened: a failure to record it is logged, not
/// answered (the caller's answer is about the change).
pub(crate) async fn record(
    state: &ConsoleState,
    session: &ConsoleSession,
    action: &str,
    target: &str,
    detail: Value,
) {
    record_as(state, &session.username, action, target, detail).await;
}

/// [`record`] for a change made before a session exists (an MFA setup).
pub(crate) async fn record_as(
    state: &ConsoleState,
    username: &str,
    action: &str,
    target: &str,
    detail: Value,
) {
    let mut detail = detail.to_string();
    if detail.len() > MAX_DETAIL_BYTES {
        let mut end = MAX_DETAIL_BYTES;
        while !detail.is_char_boundary(end) {
            end -= 1;
        }
        detail.truncate(end);
        detail.push('…');
    }
    let entry = AuditEntry {
        id: 0,
        time_ms: state.clock.now_ms(),
        username: username.to_owned(),
        action: action.to_owned(),
        target: target.to_owned(),
        detail,
    };
    if let Err(e) = state.store.append_audit(entry).await {
        tracing::error!(error = %e, action, target, user = %username, "cannot write the console audit log");
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListAudit {
    cursor: Option<String>,
    limit: Option<usize>,
}

/// `GET /v2/console/audit/log`: newest first; `cursor` resumes after the page's last entry.
pub(crate) async fn list(
    State(state): State<ConsoleState>,
    session: Session,
    Query(query): Query<ListAudit>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let before = query.cursor.as_deref().and_then(|c| c.parse::<i64>().ok());
    let entries = state
        .store
        .audit_log(before, limit)
        .await
        .map_err(|e| metafi_core::CoreError::storage("reading the audit log", e))?;
    let next = (entries.len() == limit)
        .then(|| entries.last().map(|e| e.id.to_string()))
        .flatten();
    Ok(Json(json!({
        "entries": entries.iter().map(|e| json!({
            "id": e.id.to_string(),
            "timestamp": crate::api::timestamp(e.time_ms),
            "username": e.username,
            "action": e.action,
            "target": e.target,
            "detail": e.detail,
        })).collect::<Vec<_>>(),
        "next_cursor": next.unwrap_or_default(),
    })))
}
