//! Server-rendered pages (maud: templates are Rust, checked at compile time, and every value
//! is HTML-escaped unless marked otherwise). Each page carries the session's CSRF token in a
//! `<meta>` for `assets/console.js`, which makes every change with `fetch` and the
//! `x-csrf-token` header, and draws the live charts.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;
use serde_json::Value;

use crate::api::{search_accounts, status_snapshot};
use crate::auth::{ConsoleSession, Session};
use crate::{ConsoleState, Perm, Role};

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/status") }))
        .route("/status", get(status))
        .route("/accounts", get(accounts))
        .route("/accounts/{id}", get(account))
        .route("/storage", get(storage))
        .route("/matches", get(matches))
        .route("/runtime", get(runtime))
        .route("/configuration", get(configuration))
        .route("/audit", get(audit))
        .route("/users", get(users))
}

const NAV: &[(&str, &str)] = &[
    ("status", "Status"),
    ("accounts", "Accounts"),
    ("storage", "Storage"),
    ("matches", "Matches"),
    ("worlds", "Worlds"),
    ("runtime", "Runtime"),
    ("configuration", "Configuration"),
    ("audit", "Audit log"),
    ("users", "Users"),
];

pub(crate) fn page(
    session: Option<&ConsoleSession>,
    name: &str,
    title: &str,
    body: Markup,
) -> Html<String> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(session) = session {
                    meta name="csrf-token" content=(session.csrf);
                }
                title { (title) " · MetaFi console" }
                link rel="stylesheet" href="/assets/console.css";
            }
            body data-page=(name) {
                header {
                    strong.brand { "MetaFi console" }
                    @if let Some(session) = session {
                        nav {
                            @for (path, label) in NAV {
                                a href={ "/" (path) } class=[(*path == name).then_some("current")] { (label) }
                            }
                        }
                        span.who { (session.username) " · " (session.role.name()) }
                        button #sign-out type="button" { "Sign out" }
                    }
                }
                main {
                    h1 { (title) }
                    p #message.message hidden {}
                    (body)
                }
                script src="/assets/console.js" {}
            }
        }
    };
    Html(markup.into_string())
}

/// `/login`: the only page without a session.
pub(crate) async fn login() -> Html<String> {
    page(
        None,
        "login",
        "Sign in",
        html! {
            form #signin-form {
                label { "Username " input #username name="username" autocomplete="username" required; }
                label { "Password " input #password name="password" type="password" autocomplete="current-password" required; }
                label { "MFA code " input #mfa name="mfa" inputmode="numeric" autocomplete="one-time-code" placeholder="if set up"; }
                button #signin type="submit" { "Sign in" }
            }
            // Shown when the server asks for an MFA setup: the secret for an authenticator
            // app, then a code from it.
            section #mfa-setup hidden {
                h2 { "Set up two-factor authentication" }
                p { "Add this key to an authenticator app (TOTP, 30 s, 6 digits), then enter a code from it." }
                p { "Key: " code #mfa-secret {} }
                p { "URL: " code #mfa-url {} }
                form #mfa-form {
                    label { "Code " input #mfa-setup-code inputmode="numeric" autocomplete="one-time-code" required; }
                    button #mfa-confirm type="submit" { "Confirm" }
                }
            }
            section #mfa-recovery hidden {
                h2 { "Recovery codes" }
                p { "Keep these somewhere safe: each signs you in once instead of a code. Then sign in with a code." }
                pre #recovery-codes {}
            }
        },
    )
}

async fn status(State(state): State<ConsoleState>, session: Session) -> Html<String> {
    let snapshot = status_snapshot(&state);
    let node = &snapshot["nodes"][0];
    page(
        Some(&session),
        "status",
        "Status",
        html! {
            section.cards {
                div.card { span { "Node" } strong #node-name { (node["name"].as_str().unwrap_or_default()) } }
                div.card { span { "Sockets" } strong #sockets { (node["session_count"]) } }
                div.card { span { "Matches" } strong #match-count { (node["match_count"]) } }
                div.card { span { "Memory" } strong #rss { (node["rss_bytes"].as_u64().unwrap_or(0) / (1024 * 1024)) " MiB" } }
                div.card { span { "Uptime" } strong #uptime { (node["uptime_sec"]) " s" } }
                div.card { span { "Peers" } strong #peers { (snapshot["peers"].as_array().map_or(0, Vec::len)) } }
            }
            section.charts {
                figure { figcaption { "Requests per second" } canvas #chart-rate width="480" height="140" {} }
                figure { figcaption { "Average latency (ms)" } canvas #chart-latency width="480" height="140" {} }
                figure { figcaption { "CPU (% of one core)" } canvas #chart-cpu width="480" height="140" {} }
                figure { figcaption { "Memory (MiB)" } canvas #chart-rss width="480" height="140" {} }
            }
            h2 { "Routes" }
            table #routes {
                thead { tr { th { "Method" } th { "Route" } th { "Requests" } th { "Errors" } th { "Avg ms" } } }
                tbody {}
            }
            h2 { "RPC functions" }
            table #rpc-stats {
                thead { tr { th { "Runtime" } th { "Id" } th { "Calls" } th { "Errors" } th { "Avg ms" } } }
                tbody {}
            }
        },
    )
}

#[derive(Debug, Default, Deserialize)]
struct AccountsQuery {
    #[serde(default)]
    filter: String,
    #[serde(default)]
    cursor: String,
}

async fn accounts(
    State(state): State<ConsoleState>,
    session: Session,
    Query(query): Query<AccountsQuery>,
) -> Response {
    let found = search_accounts(&state, &query.filter, &query.cursor).await;
    let body = match found {
        Ok((users, next)) => html! {
            form.search method="get" action="/accounts" {
                input #filter name="filter" value=(query.filter) placeholder="id, username, device id, email or custom id";
                button #search type="submit" { "Search" }
            }
            table #accounts {
                thead { tr { th { "Username" } th { "Id" } th { "Display name" } th { "Email" } th { "Banned" } } }
                tbody {
                    @for user in &users {
                        tr {
                            td { a href={ "/accounts/" (user.id) } { (user.username) } }
                            td.mono { (user.id) }
                            td { (user.display_name) }
                            td { (user.email.as_deref().unwrap_or_default()) }
                            td { @if user.disable_time_ms.is_some() { "yes" } }
                        }
                    }
                }
            }
            @if users.is_empty() { p.empty { "No account matches." } }
            @if let Some(next) = next {
                a href={ "/accounts?cursor=" (next) } { "Next page" }
            }
        },
        Err(e) => html! { p.error { (format!("{e:?}")) } },
    };
    page(Some(&session), "accounts", "Accounts", body).into_response()
}

async fn account(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    let Ok(user_id) = uuid::Uuid::parse_str(&id) else {
        return page(
            Some(&session),
            "accounts",
            "Account",
            html! { p.error { "Invalid user ID." } },
        )
        .into_response();
    };
    let Ok(account) = state.api.accounts.stored_account(user_id).await else {
        return page(
            Some(&session),
            "accounts",
            "Account",
            html! { p.error { "Account not found." } },
        )
        .into_response();
    };
    let objects = state
        .store
        .objects_of_user(user_id, 100)
        .await
        .unwrap_or_default();
    let user = &account.user;
    let metadata = pretty(&user.metadata);
    let wallet = pretty(&user.wallet);
    let sessions = crate::api::account_sessions(&state, user_id);
    let friends = state
        .api
        .friends
        .list_for_client(user_id, None, None, "")
        .await;
    let groups = state
        .api
        .groups
        .user_groups(user_id, None, Some(100), "")
        .await;
    let ledger = metafi_core::Wallets::new(state.store.clone(), state.clock.clone())
        .ledger_list(user_id, 100, "")
        .await;
    let body = html! {
        dl.profile data-user-id=(user.id) {
            dt { "Id" } dd.mono #account-id { (user.id) }
            dt { "Username" } dd #account-username { (user.username) }
            dt { "Display name" } dd { (user.display_name) }
            dt { "Email" } dd { (user.email.as_deref().unwrap_or_default()) }
            dt { "Custom id" } dd { (user.custom_id.as_deref().unwrap_or_default()) }
            dt { "Devices" } dd { (account.device_ids.join(", ")) }
            dt { "Wallet" } dd.mono { (user.wallet) }
            dt { "Created" } dd { (crate::api::timestamp(user.create_time_ms)) }
            dt { "Banned" } dd #account-banned { @if let Some(t) = user.disable_time_ms { (crate::api::timestamp(t)) } @else { "no" } }
        }
        h2 { "Metadata" }
        textarea #metadata rows="8" spellcheck="false" { (metadata) }
        h2 { "Wallet" }
        p.hint { "Integer balances, none below zero. Saving replaces the whole wallet (as Nakama's console does); no ledger item is recorded." }
        textarea #wallet rows="4" spellcheck="false" { (wallet) }
        div.actions {
            button #save-metadata type="button" { "Save metadata" }
            button #save-wallet type="button" { "Save wallet" }
            @if user.disable_time_ms.is_some() {
                button #unban type="button" { "Unban" }
            } @else {
                button #ban type="button" { "Ban" }
            }
            a.button #export href={ "/v2/console/account/" (user.id) "/export" } target="_blank" { "Export" }
            button #delete-account.danger type="button" { "Delete account" }
        }
        h2 { "Sessions" }
        table #account-sessions {
            thead { tr { th { "Session id" } th { "Node" } th { "Started" } th { "Client address" } th { "Format" } th {} } }
            tbody {
                @for s in &sessions {
                    @let sid = s["session_id"].as_str().unwrap_or_default();
                    tr data-session-id=(sid) {
                        td.mono { (sid) }
                        td { (s["node"].as_str().unwrap_or_default()) }
                        td { (s["start_time"].as_str().unwrap_or_default()) }
                        td.mono { (s["client_address"].as_str().unwrap_or_default()) }
                        td { (s["format"].as_str().unwrap_or_default()) }
                        td { @if session.role.may(Perm::Admin) { button.disconnect type="button" { "Disconnect" } } }
                    }
                }
            }
        }
        @if sessions.is_empty() { p.empty #no-sessions { "No live session on this node." } }
        h2 { "Friends" }
        @match &friends {
            Ok(list) => {
                table #account-friends {
                    thead { tr { th { "Username" } th { "Id" } th { "State" } th { "Since" } } }
                    tbody {
                        @for f in &list.friends {
                            tr {
                                td { a href={ "/accounts/" (f.user.id) } { (f.user.username) } }
                                td.mono { (f.user.id) }
                                td { (friend_state(f.state)) }
                                td { (f.update_time) }
                            }
                        }
                    }
                }
                @if list.friends.is_empty() { p.empty #no-friends { "No friends." } }
            }
            Err(e) => { p.error { (e.to_string()) } }
        }
        h2 { "Groups" }
        @match &groups {
            Ok(list) => {
                table #account-groups {
                    thead { tr { th { "Name" } th { "Id" } th { "State" } th { "Members" } } }
                    tbody {
                        @for g in &list.user_groups {
                            tr {
                                td { (g.group.name) }
                                td.mono { (g.group.id) }
                                td { (group_state(g.state)) }
                                td { (g.group.edge_count) " / " (g.group.max_count) }
                            }
                        }
                    }
                }
                @if list.user_groups.is_empty() { p.empty #no-groups { "No groups." } }
            }
            Err(e) => { p.error { (e.to_string()) } }
        }
        h2 { "Wallet ledger" }
        @match &ledger {
            Ok(page) => {
                table #account-ledger {
                    thead { tr { th { "When" } th { "Changeset" } th { "Metadata" } th { "Id" } } }
                    tbody {
                        @for item in &page.items {
                            tr {
                                td { (crate::api::timestamp(item.create_time_ms)) }
                                td.mono { (serde_json::to_string(&item.changeset).unwrap_or_default()) }
                                td.mono { (item.metadata) }
                                td.mono { (item.id) }
                            }
                        }
                    }
                }
                @if page.items.is_empty() { p.empty #no-ledger { "No wallet changes recorded." } }
                @if page.cursor.is_some() { p.hint { "The 100 newest; the JSON API pages further (/v2/console/account/" (user.id) "/wallet)." } }
            }
            Err(e) => { p.error { (e.to_string()) } }
        }
        h2 { "Storage" }
        table #account-objects {
            thead { tr { th { "Collection" } th { "Key" } th { "Version" } th { "Read" } th { "Write" } } }
            tbody {
                @for o in &objects {
                    tr {
                        td { (o.collection) }
                        td { a href={ "/storage?collection=" (urlencode(&o.collection)) "&key=" (urlencode(&o.key)) "&user_id=" (o.user_id) } { (o.key) } }
                        td.mono { (o.version) }
                        td { (o.permission_read) }
                        td { (o.permission_write) }
                    }
                }
            }
        }
    };
    page(
        Some(&session),
        "account",
        &format!("Account {}", user.username),
        body,
    )
    .into_response()
}

#[derive(Debug, Default, Deserialize)]
struct StorageQuery {
    #[serde(default)]
    collection: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    user_id: String,
    #[serde(default)]
    cursor: String,
}

async fn storage(
    State(state): State<ConsoleState>,
    session: Session,
    Query(query): Query<StorageQuery>,
) -> Response {
    let collections = state
        .store
        .storage_collections(1000)
        .await
        .unwrap_or_default();
    let owner = uuid::Uuid::parse_str(&query.user_id).ok();
    let object = match (query.key.is_empty(), owner) {
        (false, Some(owner)) => state
            .api
            .objects
            .read(
                metafi_storage::Caller::Server,
                vec![metafi_storage::ObjectId {
                    collection: query.collection.clone(),
                    key: query.key.clone(),
                    user_id: owner,
                }],
            )
            .await
            .ok()
            .and_then(|mut found| found.pop()),
        _ => None,
    };
    let page_of = if query.collection.is_empty() || object.is_some() {
        None
    } else {
        let cursor = Some(query.cursor.as_str()).filter(|c| !c.is_empty());
        state
            .api
            .objects
            .list(
                metafi_storage::Caller::Server,
                &query.collection,
                owner,
                100,
                cursor,
            )
            .await
            .ok()
    };
    let body = html! {
        div.split {
            aside {
                h2 { "Collections" }
                ul #collections {
                    @for c in &collections {
                        li { a href={ "/storage?collection=" (urlencode(c)) } class=[(c == &query.collection).then_some("current")] { (c) } }
                    }
                }
            }
            section {
                @if let Some(o) = &object {
                    h2 #object-title { (o.collection) " / " (o.key) }
                    dl.profile #object data-collection=(o.collection) data-key=(o.key) data-user-id=(o.user_id) {
                        dt { "Owner" } dd.mono { a href={ "/accounts/" (o.user_id) } { (o.user_id) } }
                        dt { "Version" } dd.mono #object-version { (o.version) }
                        dt { "Updated" } dd { (crate::api::timestamp(o.update_time_ms)) }
                    }
                    textarea #object-value rows="12" spellcheck="false" { (pretty(&o.value)) }
                    div.actions {
                        label { "Read " input #object-read type="number" min="0" max="2" value=(o.permission_read); }
                        label { "Write " input #object-write type="number" min="0" max="1" value=(o.permission_write); }
                        button #save-object type="button" { "Save (if unchanged since loaded)" }
                        button #delete-object.danger type="button" { "Delete" }
                    }
                } @else if let Some(page_of) = &page_of {
                    h2 { (query.collection) }
                    table #objects {
                        thead { tr { th { "Key" } th { "Owner" } th { "Version" } th { "Read" } th { "Write" } th { "Updated" } } }
                        tbody {
                            @for o in &page_of.objects {
                                tr {
                                    td { a href={ "/storage?collection=" (urlencode(&o.collection)) "&key=" (urlencode(&o.key)) "&user_id=" (o.user_id) } { (o.key) } }
                                    td.mono { (o.user_id) }
                                    td.mono { (o.version) }
                                    td { (o.permission_read) }
                                    td { (o.permission_write) }
                                    td { (crate::api::timestamp(o.update_time_ms)) }
                                }
                            }
                        }
                    }
                    @if let Some(next) = &page_of.cursor {
                        a href={ "/storage?collection=" (urlencode(&query.collection)) "&cursor=" (urlencode(next)) } { "Next page" }
                    }
                } @else {
                    p.empty { "Choose a collection." }
                }
            }
        }
    };
    page(Some(&session), "storage", "Storage", body).into_response()
}

async fn matches(State(state): State<ConsoleState>, session: Session) -> Response {
    let listing = crate::api::matches_listing(&state).unwrap_or(Value::Null);
    let empty = Vec::new();
    let entries = listing["matches"].as_array().unwrap_or(&empty);
    let body = html! {
        p.hint { "Tick time and lateness of each authoritative match of this node, sampled every second." }
        div #matches {
            @for m in entries {
                @let id = m["api_match"]["match_id"].as_str().unwrap_or_default();
                section.match data-match-id=(id) {
                    h2.mono { (id) }
                    p {
                        "handler " strong { (m["api_match"]["handler_name"].as_str().unwrap_or_default()) }
                        " · label " code { (m["api_match"]["label"].as_str().unwrap_or_default()) }
                        " · size " span.size { (m["api_match"]["size"]) }
                        " · tick rate " (m["api_match"]["tick_rate"])
                    }
                    p.stats {}
                    p.legend { span.tick { "■ tick time (ms)" } " " span.late { "■ lateness (ms)" } }
                    canvas.tick-chart width="640" height="140" {}
                    (presences_table(&state, id))
                    @if session.role.may(Perm::Develop) {
                        div.actions {
                            input.signal-data placeholder="signal data";
                            button.signal type="button" { "Signal" }
                            span.signal-result {}
                            button.end-match.danger type="button" { "End match" }
                        }
                    }
                }
            }
        }
        @if entries.is_empty() { p.empty #no-matches { "No matches are running." } }
    };
    page(Some(&session), "matches", "Matches", body).into_response()
}

/// Who is in a match: its joined presences (this node's matches).
fn presences_table(state: &ConsoleState, id: &str) -> Markup {
    match state.api.matches.presences(id) {
        Ok(Some(found)) => html! {
            table.presences {
                thead { tr { th { "Username" } th { "User id" } th { "Session id" } th { "Node" } } }
                tbody {
                    @for p in &found.presences {
                        tr {
                            td { a href={ "/accounts/" (p.user_id) } { (&*p.username) } }
                            td.mono { (p.user_id) }
                            td.mono { (p.session_id) }
                            td { (&*p.node) }
                        }
                    }
                }
            }
            @if found.presences.is_empty() { p.empty.no-presences { "Nobody is in this match." } }
        },
        Ok(None) => html! {},
        Err(e) => html! { p.hint { "Presences: " (e.to_string()) } },
    }
}

async fn runtime(State(state): State<ConsoleState>, session: Session) -> Response {
    let info = &state.runtime;
    let body = html! {
        h2 { "Modules" }
        ul #modules {
            @for (path, runtime) in &info.modules { li { code { (path) } " (" (runtime) ")" } }
            @if info.modules.is_empty() { li.empty { "No script modules." } }
        }
        h2 { "RPC functions" }
        table #rpcs {
            thead { tr { th { "Id" } th { "Runtime" } } }
            tbody { @for (id, runtime) in &info.rpcs { tr { td.mono { (id) } td { (runtime) } } } }
        }
        h2 { "RPC explorer" }
        form #rpc-form {
            label { "Function " select #rpc-id { @for (id, _) in &info.rpcs { option value=(id) { (id) } } } }
            label { "As user (id, empty: no user) " input #rpc-user; }
            label.wide { "Payload " textarea #rpc-body rows="6" spellcheck="false" { "{}" } }
            button #rpc-call type="submit" { "Call" }
        }
        p { "Time: " span #rpc-time { "–" } }
        pre #rpc-result {}
        h2 { "Last errors" }
        p.hint { "Failed RPCs, hooks and match handlers of each module, newest first (runtime.errors_per_module a module)." }
        @let errors = state.module_errors.snapshot();
        @if errors.is_empty() { p.empty #no-module-errors { "No module has failed." } }
        @for (module, list) in &errors {
            section.module-errors data-module=(module) {
                h3 { code { (module) } }
                table {
                    thead { tr { th { "When" } th { "Runtime" } th { "Function" } th { "Kind" } th { "Message" } } }
                    tbody {
                        @for e in list {
                            tr {
                                td { (crate::api::timestamp(e.time_ms)) }
                                td { (e.runtime) }
                                td.mono { (e.function) }
                                td { (e.kind) }
                                td { pre.error-message { (e.message) } }
                            }
                        }
                    }
                }
            }
        }
    };
    page(Some(&session), "runtime", "Runtime", body).into_response()
}

async fn configuration(State(state): State<ConsoleState>, session: Session) -> Response {
    let text = serde_json::to_string_pretty(&*state.effective_config).unwrap_or_default();
    page(
        Some(&session),
        "configuration",
        "Configuration",
        html! {
            p.hint { "The effective configuration after every layer; secrets are shown as ***." }
            pre #config { (text) }
        },
    )
    .into_response()
}

async fn audit(State(state): State<ConsoleState>, session: Session) -> Response {
    if !session.role.may(Perm::Admin) {
        return page(
            Some(&session),
            "audit",
            "Audit log",
            html! { p.error { "Unauthorized: you do not have permissions to access this resource." } },
        )
        .into_response();
    }
    let entries = state.store.audit_log(None, 200).await.unwrap_or_default();
    page(
        Some(&session),
        "audit",
        "Audit log",
        html! {
            table #audit {
                thead { tr { th { "When" } th { "Who" } th { "What" } th { "Target" } th { "Detail" } } }
                tbody {
                    @for e in &entries {
                        tr {
                            td { (crate::api::timestamp(e.time_ms)) }
                            td { (e.username) }
                            td { (e.action) }
                            td.mono { (e.target) }
                            td.mono { (e.detail) }
                        }
                    }
                }
            }
        },
    )
    .into_response()
}

/// Nakama's friend states by number.
fn friend_state(state: i32) -> &'static str {
    match state {
        0 => "friend",
        1 => "invite sent",
        2 => "invite received",
        3 => "blocked",
        _ => "unknown",
    }
}

/// Nakama's group membership states by number.
fn group_state(state: i32) -> &'static str {
    match state {
        0 => "superadmin",
        1 => "admin",
        2 => "member",
        3 => "join request",
        4 => "banned",
        _ => "unknown",
    }
}

/// JSON text indented for an editor; the text itself when it is not JSON.
fn pretty(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| text.to_owned())
}

/// Percent-encodes a query value.
fn urlencode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `/users`: console users (admins): add, change role, require or reset MFA, delete.
async fn users(State(state): State<ConsoleState>, session: Session) -> Response {
    if !session.role.may(Perm::Admin) {
        return page(
            Some(&session),
            "users",
            "Users",
            html! { p.error { "Unauthorized: you do not have permissions to access this resource." } },
        )
        .into_response();
    }
    let users = state.store.console_users().await.unwrap_or_default();
    const ROLES: [Role; 4] = [
        Role::Admin,
        Role::Developer,
        Role::Maintainer,
        Role::Readonly,
    ];
    page(
        Some(&session),
        "users",
        "Users",
        html! {
            table #users {
                thead { tr { th { "Username" } th { "Email" } th { "Role" } th { "MFA" } th { "Created" } th {} } }
                tbody {
                    @for u in &users {
                        tr data-username=(u.username) {
                            td { (u.username) }
                            td { (u.email) }
                            td {
                                select.role disabled[u.username == session.username] {
                                    @for r in ROLES {
                                        option value=(r.number()) selected[r.number() == u.role] { (r.name()) }
                                    }
                                }
                            }
                            td {
                                (if u.mfa_secret.is_some() { "enabled" } else { "not set up" })
                                label { input.mfa-required type="checkbox" checked[u.mfa_required]; " required" }
                                button.mfa-reset type="button" disabled[u.mfa_secret.is_none()] { "Reset" }
                            }
                            td { (crate::api::timestamp(u.create_time_ms)) }
                            td { button.delete-user type="button" disabled[u.username == session.username] { "Delete" } }
                        }
                    }
                }
            }
            h2 { "Add a user" }
            form #add-user {
                label { "Username " input #new-username required minlength="3" maxlength="20"; }
                label { "Email " input #new-email type="email" required; }
                label { "Password " input #new-password type="password" autocomplete="new-password" required minlength="12" maxlength="128"; }
                label { "Role " select #new-role { @for r in ROLES { option value=(r.number()) selected[r == Role::Readonly] { (r.name()) } } } }
                label { input #new-mfa-required type="checkbox"; " MFA required" }
                button #add-user-submit type="submit" { "Add" }
            }
        },
    )
    .into_response()
}
