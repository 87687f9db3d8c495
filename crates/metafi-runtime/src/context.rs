//! What a server function learns about the call it serves: Nakama's runtime context.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::RpcContext;

/// Why a script function runs; engines expose it as `ctx.execution_mode` with these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionMode {
    /// Module load (`InitModule`, top-level Lua code) and `nk.run_once`.
    RunOnce,
    Rpc,
    /// A match handler (match engine, issue 4).
    Match,
    /// `nk.match_create` calling a match handler's init (match engine, issue 4).
    MatchCreate,
    /// The `matchmaker_matched` hook.
    Matchmaker,
    /// A before hook on a client call (`register_req_before`, `register_rt_before`).
    Before,
    /// An after hook on a client call.
    After,
    /// The shutdown function (`register_shutdown`), when the server stops.
    Shutdown,
    /// The leaderboard reset function (`register_leaderboard_reset`), when a period ends.
    LeaderboardReset,
    /// The tournament end function (`register_tournament_end`), when an active window ends.
    TournamentEnd,
    /// The tournament reset function (`register_tournament_reset`), when a period ends.
    TournamentReset,
    /// An event processor (`register_event`).
    Event,
    /// `registerPurchaseNotificationApple`'s function, on an App Store notification.
    PurchaseNotificationApple,
    /// `registerSubscriptionNotificationApple`'s function, on an App Store notification.
    SubscriptionNotificationApple,
    /// A storage index filter (`register_storage_index_filter`), on each candidate write.
    StorageIndexFilter,
    /// `registerPurchaseNotificationGoogle`'s function, on a Google Play notification.
    PurchaseNotificationGoogle,
    /// `registerSubscriptionNotificationGoogle`'s function, on a Google Play notification.
    SubscriptionNotificationGoogle,
}

impl ExecutionMode {
    /// Nakama's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::RunOnce => "run_once",
            ExecutionMode::Rpc => "rpc",
            ExecutionMode::Match => "match",
            ExecutionMode::MatchCreate => "match_create",
            ExecutionMode::Matchmaker => "matchmaker",
            ExecutionMode::Before => "before",
            ExecutionMode::After => "after",
            ExecutionMode::Shutdown => "shutdown",
            ExecutionMode::LeaderboardReset => "leaderboard_reset",
            ExecutionMode::TournamentEnd => "tournament_end",
            ExecutionMode::TournamentReset => "tournament_reset",
            ExecutionMode::Event => "event",
            ExecutionMode::PurchaseNotificationApple => "purchase_notification_apple",
            ExecutionMode::SubscriptionNotificationApple => "subscription_notification_apple",
            ExecutionMode::StorageIndexFilter => "storage_index_filter",
            ExecutionMode::PurchaseNotificationGoogle => "purchase_notification_google",
            ExecutionMode::SubscriptionNotificationGoogle => "subscription_notification_google",
        }
    }
}

/// The context of one invocation. Shared (`Arc`) because engines convert it lazily and the
/// host keeps it for logging.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub mode: ExecutionMode,
    /// Node name (`name` in the config).
    pub node: Arc<str>,
    /// Server version.
    pub version: &'static str,
    /// `runtime.env`: key/value strings every script sees as `ctx.env`.
    pub env: Arc<HashMap<String, String>>,
    /// Who called and how: user (absent for HTTP-key calls), client address, query, headers.
    pub request: RpcContext,
}

impl CallContext {
    /// The context of module loading and `run_once`: no user, no request.
    pub fn load(node: Arc<str>, env: Arc<HashMap<String, String>>) -> CallContext {
        CallContext {
            mode: ExecutionMode::RunOnce,
            node,
            version: env!("CARGO_PKG_VERSION"),
            env,
            request: RpcContext::default(),
        }
    }
}

/// A client port as the text scripts see (`clientPort`, `client_port`: Nakama passes a
/// string), written into `digits` without allocating.
pub fn port_text(mut port: u16, digits: &mut [u8; 5]) -> &str {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (port % 10) as u8;
        port /= 10;
        if port == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&digits[at..]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ports_are_written_in_decimal() {
        for port in [0, 7, 10, 7350, 65_535] {
            assert_eq!(super::port_text(port, &mut [0; 5]), port.to_string());
        }
    }
}
