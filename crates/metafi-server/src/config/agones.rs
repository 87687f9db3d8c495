//! The `[agones]` keys: whether the node speaks the Agones SDK, where the SDK server is, how
//! often it sends Health and its counts (docs/MATCHES.md, "Agones").

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::check::Checker;

/// The environment variable Agones sets in a game server's pod: the SDK server's gRPC port.
pub const SDK_PORT_ENV: &str = "AGONES_SDK_GRPC_PORT";

/// `[agones]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawAgones {
    /// Speak the Agones SDK (Ready, Health, labels, counters, Shutdown).
    pub enabled: bool,
    /// The SDK server's address (the sidecar in the same pod).
    pub address: String,
    /// The SDK server's gRPC port; `AGONES_SDK_GRPC_PORT`, when set, wins.
    pub port: i64,
    /// How often Health is sent, milliseconds.
    pub health_interval_ms: i64,
    /// How often labels and counters are brought up to date, milliseconds.
    pub update_interval_ms: i64,
    /// Keep the beta Counters `players` and `matches` current.
    pub counters: bool,
    /// A List (beta) kept holding the user ids of the node's realtime sessions; "" for none.
    pub players_list: String,
    /// A List kept holding the ids of the node's authoritative matches; "" for none.
    pub matches_list: String,
    /// Capacities given to those Lists at start (1 .. 1000); 0 keeps the GameServer's.
    pub players_list_capacity: i64,
    pub matches_list_capacity: i64,
}

impl Default for RawAgones {
    fn default() -> Self {
        RawAgones {
            enabled: false,
            address: "127.0.0.1".into(),
            port: 9357,
            health_interval_ms: 2000,
            update_interval_ms: 1000,
            counters: true,
            players_list: String::new(),
            matches_list: String::new(),
            players_list_capacity: 0,
            matches_list_capacity: 0,
        }
    }
}

/// What the Agones task runs with.
#[derive(Debug, Clone)]
pub struct AgonesSettings {
    pub sdk: SocketAddr,
    pub health_interval: Duration,
    pub update_interval: Duration,
    pub counters: bool,
    /// The players List and its capacity to set (`None`: the GameServer's).
    pub players_list: Option<(String, Option<i64>)>,
    /// The matches List and its capacity to set.
    pub matches_list: Option<(String, Option<i64>)>,
}

/// Agones' largest List capacity.
const MAX_LIST_CAPACITY: i64 = 1000;

fn list(
    check: &mut Checker,
    key: &str,
    name: &str,
    capacity: i64,
) -> Option<(String, Option<i64>)> {
    let capacity = check.range(
        &format!("agones.{key}_capacity"),
        capacity,
        0,
        MAX_LIST_CAPACITY,
    );
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    Some((name.to_owned(), (capacity > 0).then_some(capacity)))
}

/// `None` when disabled or a value is wrong (then a problem is recorded). `env_port` is
/// `AGONES_SDK_GRPC_PORT`'s value, if set.
pub(super) fn validate(
    a: &RawAgones,
    env_port: Option<&str>,
    check: &mut Checker,
) -> Option<AgonesSettings> {
    let port = match env_port {
        Some(text) => match text.trim().parse::<i64>() {
            Ok(port) => check.port(SDK_PORT_ENV, port),
            Err(_) => {
                check.problem(format!("{SDK_PORT_ENV}: not a port: {text:?}"));
                check.port("agones.port", a.port)
            }
        },
        None => check.port("agones.port", a.port),
    };
    let ip = check.ip("agones.address", &a.address);
    let health_interval = check.millis(
        "agones.health_interval_ms",
        a.health_interval_ms,
        10,
        600_000,
    );
    let update_interval = check.millis(
        "agones.update_interval_ms",
        a.update_interval_ms,
        10,
        600_000,
    );
    let players_list = list(
        check,
        "players_list",
        &a.players_list,
        a.players_list_capacity,
    );
    let matches_list = list(
        check,
        "matches_list",
        &a.matches_list,
        a.matches_list_capacity,
    );
    if !a.enabled {
        return None;
    }
    Some(AgonesSettings {
        sdk: SocketAddr::new(ip?, port.get()),
        health_interval,
        update_interval,
        counters: a.counters,
        players_list,
        matches_list,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests: a panic is the failure report
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_the_pods_port_wins_when_on() {
        let mut check = Checker::default();
        assert!(validate(&RawAgones::default(), None, &mut check).is_none());
        let on = RawAgones {
            enabled: true,
            ..RawAgones::default()
        };
        let settings = validate(&on, None, &mut check).unwrap();
        assert_eq!(settings.sdk, "127.0.0.1:9357".parse().unwrap());
        assert_eq!(settings.health_interval, Duration::from_secs(2));
        let settings = validate(&on, Some("9400"), &mut check).unwrap();
        assert_eq!(settings.sdk.port(), 9400);
        assert!(check.problems().is_empty(), "{:?}", check.problems());

        validate(&on, Some("port"), &mut check);
        let bad = RawAgones {
            health_interval_ms: 0,
            ..on
        };
        validate(&bad, None, &mut check);
        assert_eq!(check.problems().len(), 2, "{:?}", check.problems());
        assert!(check.problems()[0].starts_with("AGONES_SDK_GRPC_PORT"));
        assert!(check.problems()[1].contains("agones.health_interval_ms"));
    }

    #[test]
    fn lists_are_kept_only_when_named_with_a_capacity_up_to_agones_limit() {
        let mut check = Checker::default();
        let on = RawAgones {
            enabled: true,
            ..RawAgones::default()
        };
        let settings = validate(&on, None, &mut check).unwrap();
        assert_eq!(settings.players_list, None);
        assert_eq!(settings.matches_list, None);
        let lists = RawAgones {
            players_list: "players".into(),
            matches_list: " rooms ".into(),
            matches_list_capacity: 1000,
            ..on.clone()
        };
        let settings = validate(&lists, None, &mut check).unwrap();
        assert_eq!(settings.players_list, Some(("players".into(), None)));
        assert_eq!(settings.matches_list, Some(("rooms".into(), Some(1000))));
        assert!(check.problems().is_empty(), "{:?}", check.problems());
        let over = RawAgones {
            players_list: "players".into(),
            players_list_capacity: 1001,
            ..on
        };
        validate(&over, None, &mut check);
        assert_eq!(check.problems().len(), 1, "{:?}", check.problems());
        assert!(check.problems()[0].contains("agones.players_list_capacity"));
    }
}
