//! Worlds (docs/CONSOLE.md, "Worlds"): the list of this node's served worlds and each one's
//! live top-down view, `/world/{id}`. The page draws on a canvas from a compact binary feed:
//! `GET /v2/console/world/{id}/frame?since=T` answers a snapshot packet of the world codec
//! (docs/WORLD.md) holding every player, rocket and item, encoded against the frame of tick
//! `T` the page already has — the same records a client's snapshot carries.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use maud::html;
use metafi_api::ApiError;
use metafi_proto::Code;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Session;
use crate::pages::page;
use crate::{ConsoleState, Perm};

const SCRIPT: &str = include_str!("../assets/world.js");

/// What the console reads of the node's worlds (the server implements it over its world
/// service; a node without worlds has none).
pub trait WorldSource: Send + Sync {
    /// This node's running worlds' match ids, sorted.
    fn ids(&self) -> Vec<String>;
    /// A world's counters (`GET /debug/worlds`' entry), `None` if it is not running here.
    fn stats(&self, id: &str) -> Option<Value>;
    /// A world's map as the page draws it (bounds, brushes, item spots, rates).
    fn map(&self, id: &str) -> Option<Value>;
    /// `None`: no such world. `Some(None)`: no frame newer than `since` yet (asking starts
    /// the frames).
    #[allow(clippy::option_option)] // "no world" and "no frame yet" answer differently
    fn frame(&self, id: &str, since: Option<u32>) -> Option<Option<Vec<u8>>>;
}

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/worlds", get(list_page))
        .route("/world/{id}", get(view_page))
        .route("/assets/world.js", get(script))
        .route("/v2/console/world", get(list))
        .route("/v2/console/world/{id}", get(one))
        .route("/v2/console/world/{id}/frame", get(frame))
}

fn source(state: &ConsoleState) -> Option<&Arc<dyn WorldSource>> {
    state.worlds.as_ref()
}

fn not_found() -> ApiError {
    ApiError::new(Code::NotFound, "World not found.")
}

fn summaries(state: &ConsoleState) -> Vec<Value> {
    let Some(worlds) = source(state) else {
        return Vec::new();
    };
    worlds
        .ids()
        .into_iter()
        .map(|id| {
            let label = state
                .api
                .matches
                .get(&id)
                .ok()
                .flatten()
                .and_then(|m| m.label)
                .unwrap_or_default();
            let label: Value = serde_json::from_str(&label).unwrap_or(Value::Null);
            json!({ "match_id": id, "label": label, "stats": worlds.stats(&id) })
        })
        .collect()
}

/// `GET /v2/console/world` (MetaFi): this node's worlds with their label and counters.
async fn list(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(json!({ "worlds": summaries(&state) })))
}

/// `GET /v2/console/world/{id}` (MetaFi): the map to draw and the world's counters.
async fn one(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let worlds = source(&state).ok_or_else(not_found)?;
    let map = worlds.map(&id).ok_or_else(not_found)?;
    Ok(Json(
        json!({ "match_id": id, "map": map, "stats": worlds.stats(&id) }),
    ))
}

#[derive(Debug, Default, Deserialize)]
struct FrameQuery {
    since: Option<u32>,
}

/// `GET /v2/console/world/{id}/frame?since=T` (MetaFi): the newest whole-world frame as a
/// snapshot packet (`application/octet-stream`), against the frame of tick `T` when the world
/// still keeps it; 204 when there is none newer than `since` yet (before the first frame
/// too).
async fn frame(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
    Query(query): Query<FrameQuery>,
) -> Result<Response, ApiError> {
    session.require(Perm::Read)?;
    let worlds = source(&state).ok_or_else(not_found)?;
    match worlds.frame(&id, query.since).ok_or_else(not_found)? {
        Some(bytes) => Ok((
            [
                (CONTENT_TYPE, "application/octet-stream"),
                (CACHE_CONTROL, "no-store"),
            ],
            bytes,
        )
            .into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

async fn script() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (CACHE_CONTROL, "no-cache"),
        ],
        SCRIPT,
    )
}

/// `/worlds`: the list, each linking to its view.
async fn list_page(State(state): State<ConsoleState>, session: Session) -> Html<String> {
    let worlds = summaries(&state);
    page(
        Some(&session),
        "worlds",
        "Worlds",
        html! {
            table #worlds {
                thead { tr { th { "World" } th { "Map" } th { "Players" } th { "Tick rate" } th { "Ticks" } th { "Last tick ms" } } }
                tbody {
                    @for w in &worlds {
                        @let id = w["match_id"].as_str().unwrap_or_default();
                        tr {
                            td.mono { a href={ "/world/" (id) } { (id) } }
                            td { (w["label"]["map"].as_str().unwrap_or_default()) }
                            td { (w["stats"]["players"]) }
                            td { (w["label"]["tick_rate"]) }
                            td { (w["stats"]["ticks"]) }
                            td { (format!("{:.2}", w["stats"]["last_tick_seconds"].as_f64().unwrap_or(0.0) * 1000.0)) }
                        }
                    }
                }
            }
            @if worlds.is_empty() {
                p.empty { "No world runs on this node (" code { "[world] enabled" } " or " code { "nk.world_create" } " starts one)." }
            }
        },
    )
}

/// `/world/{id}`: the live top-down view.
async fn view_page(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    let known = source(&state).is_some_and(|w| w.map(&id).is_some());
    if !known {
        return (
            StatusCode::NOT_FOUND,
            page(
                Some(&session),
                "worlds",
                "World",
                html! { p.error { "World not found." } },
            ),
        )
            .into_response();
    }
    page(
        Some(&session),
        "worlds",
        "World",
        html! {
            p.mono #world-id { (id) }
            section.cards {
                div.card { span { "Players" } strong #world-players { "–" } }
                div.card { span { "Rockets" } strong #world-rockets { "–" } }
                div.card { span { "Items up" } strong #world-items { "–" } }
                div.card { span { "Tick" } strong #world-tick { "–" } }
                div.card { span { "Frames per second" } strong #world-fps { "–" } }
                div.card { span { "Last frame" } strong #world-bytes { "–" } }
            }
            figure.world {
                canvas #world-canvas width="900" height="900" style="max-width: 900px" data-world=(id) data-frames="0" {}
                figcaption.legend {
                    span style="color: #2563eb" { "■ player" } " · " span style="color: #b42318" { "■ dead" } " · "
                    span style="color: #f59e0b" { "● rocket" } " · " span style="color: #16a34a" { "■ item" } " (pale: taken) · walls, crates and platforms in grey, lighter when higher"
                }
            }
            script src="/assets/world.js" {}
        },
    )
    .into_response()
}
