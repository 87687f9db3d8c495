//! The route table: Nakama's paths and methods.

mod account;
mod account_links;
mod authenticate;
mod channel;
mod event;
mod fleet;
mod friend;
mod friend_import;
mod group;
mod health;
mod leaderboard;
mod match_list;
mod matchmaker;
mod notification;
mod party;
mod purchase;
mod rpc;
mod session;
mod social_links;
mod storage;
pub(crate) mod store_notification;
mod tournament;
mod user;

use axum::Router;
use axum::routing::{get, post, put};

use crate::ApiState;

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/healthcheck", get(health::healthcheck))
        .route("/v2/healthcheck", get(health::healthcheck))
        .route(
            "/v2/account/authenticate/device",
            post(authenticate::device),
        )
        .route(
            "/v2/account/authenticate/custom",
            post(authenticate::custom),
        )
        .route("/v2/account/authenticate/email", post(authenticate::email))
        .route("/v2/account/session/refresh", post(session::refresh))
        .route("/v2/session/logout", post(session::logout))
        .route("/v2/account", get(account::get).put(account::update))
        .route("/v2/user", get(user::get))
        .route("/v2/channel/{channel_id}", get(channel::list))
        .route("/v2/match", get(match_list::list))
        .route("/v2/storage", post(storage::read).put(storage::write))
        // A collection may be called "delete": GET still lists it, as with Nakama's router.
        .route(
            "/v2/storage/delete",
            put(storage::delete).get(storage::list_delete_collection),
        )
        .route("/v2/rpc/{id}", get(rpc::call).post(rpc::call))
        .route("/v2/rpc/", get(rpc::missing_id).post(rpc::missing_id))
        .route("/v2/storage/{collection}", get(storage::list))
        .route(
            "/v2/storage/{collection}/{user_id}",
            get(storage::list_for_user),
        )
        .merge(notification::routes())
        .merge(friend::routes())
        .merge(friend_import::routes())
        .merge(group::routes())
        .merge(account_links::routes())
        .merge(leaderboard::routes())
        .merge(tournament::routes())
        .merge(social_links::routes())
        .merge(purchase::routes())
        .merge(party::routes())
        .merge(matchmaker::routes())
        .merge(event::routes())
        .merge(fleet::routes())
}
