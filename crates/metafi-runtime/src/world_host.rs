//! How server code creates served worlds (`nk.world_create`, a MetaFi function): the server
//! implements [`WorldHost`] over its world service (`metafi-world-server`), which this crate
//! does not depend on.

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

/// Creates worlds on this node.
pub trait WorldHost: Send + Sync + std::fmt::Debug {
    /// Creates a world on `map` (`arena`, `open`, `open:N` or a map file) with `options`
    /// (`tick_rate`, `max_players`, `seed`) over the server's `[world]` settings; answers the
    /// world's match id, or why it could not be created.
    fn create_world(
        &self,
        map: String,
        options: Map<String, Value>,
    ) -> BoxFuture<'_, Result<String, String>>;
}
