use std::io::Write;

use super::*;
use crate::config::database::database_backend;
use crate::config::layers::{defaults_table, leaf_keys};

fn load_with(
    file: Option<&str>,
    env: &[(&str, &str)],
    overrides: &[(&str, &str)],
) -> anyhow::Result<RawConfig> {
    let mut tmp = tempfile::NamedTempFile::new().unwrap();
    if let Some(text) = file {
        tmp.write_all(text.as_bytes()).unwrap();
    }
    let sources = Sources {
        file: file.map(|_| tmp.path()),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        overrides: overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    load(&sources)
}

#[test]
fn annotated_defaults_parse_back_to_the_defaults() {
    let parsed: RawConfig = toml::from_str(DEFAULT_TOML).unwrap();
    assert_eq!(parsed, RawConfig::default());
}

#[test]
fn annotated_defaults_list_every_key() {
    let documented: toml::Table = toml::from_str(DEFAULT_TOML).unwrap();
    let mut documented: Vec<String> = leaf_keys(&documented).into_iter().map(|(k, _)| k).collect();
    let mut known: Vec<String> = leaf_keys(&defaults_table().unwrap())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    documented.sort();
    known.sort();
    assert_eq!(documented, known);
}

#[test]
fn environment_names_are_unambiguous() {
    let keys = leaf_keys(&defaults_table().unwrap());
    let mut names: Vec<String> = keys.iter().map(|(k, _)| env_name(k)).collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len());
}

#[test]
fn defaults_validate_and_listen_on_nakamas_port() {
    let config = Config::try_from(RawConfig::default()).unwrap();
    assert_eq!(config.listen.to_string(), "127.0.0.1:7350");
    assert_eq!(config.metrics.unwrap().to_string(), "127.0.0.1:9100");
    assert_eq!(
        config.database.backend,
        DatabaseBackend::Sqlite {
            path: PathBuf::from("./data/metafi.db")
        }
    );
    // The four keys of the client API, and the console's signing key, default admin and MFA
    // encryption key.
    assert_eq!(config.insecure_defaults().len(), 7);
    assert_eq!(
        config.console.as_ref().map(|c| c.listen.to_string()),
        Some("127.0.0.1:7351".to_owned())
    );
    assert_eq!(config.runtime.path, PathBuf::from("./data/modules"));
    assert_eq!(config.api.http_key, "defaulthttpkey");
}

#[test]
fn layers_apply_in_order_file_then_env_then_flags() {
    let raw = load_with(
        Some("[socket]\nport = 1000\naddress = \"0.0.0.0\"\n[logger]\nlevel = \"debug\"\n"),
        &[
            ("METAFI_SOCKET_PORT", "2000"),
            ("METAFI_DATA_DIR", "/tmp/x"),
            ("PATH", "/bin"),
        ],
        &[("socket.port", "3000")],
    )
    .unwrap();
    assert_eq!(raw.socket.port, 3000, "flag wins over env and file");
    assert_eq!(
        raw.socket.address, "0.0.0.0",
        "file value kept when nothing overrides it"
    );
    assert_eq!(raw.data_dir, "/tmp/x", "env applies");
    assert_eq!(raw.logger.level, "debug");
    assert_eq!(raw.metrics.port, 9100, "untouched keys keep defaults");
}

#[test]
fn unknown_file_key_is_an_error_naming_the_key() {
    let err = load_with(Some("[socket]\nprot = 1\n"), &[], &[]).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("socket") && text.contains("prot"), "{text}");
}

#[test]
fn unknown_environment_variable_is_an_error() {
    let err = load_with(None, &[("METAFI_SOCKET_PROT", "1")], &[]).unwrap_err();
    assert!(format!("{err:#}").contains("METAFI_SOCKET_PROT"));
}

#[test]
fn reserved_environment_variables_are_ignored() {
    // Reserved names beside a real key: the real key applies, the reserved ones change nothing
    // (and are not refused as unknown keys).
    let raw = load_with(
        None,
        &[
            ("METAFI_TEST_POSTGRES_URL", "x"),
            ("METAFI_CONFIG", "y"),
            ("METAFI_REQUIRE_POSTGRES", "1"),
            ("METAFI_BENCH_SERVER", "z"),
            ("METAFI_PG_BIN", "w"),
            ("METAFI_SOCKET_PORT", "7351"),
        ],
        &[],
    )
    .unwrap();
    let mut expected = RawConfig::default();
    expected.socket.port = 7351;
    assert_eq!(raw, expected);
}

#[test]
fn typed_values_are_checked() {
    let err = load_with(None, &[("METAFI_SOCKET_PORT", "seventy")], &[]).unwrap_err();
    assert!(format!("{err:#}").contains("expected an integer"));
    let raw = load_with(None, &[("METAFI_METRICS_ENABLED", "false")], &[]).unwrap();
    assert!(!raw.metrics.enabled);
}

#[test]
fn validation_reports_every_problem() {
    let mut raw = RawConfig::default();
    raw.socket.port = 70_000;
    raw.accounts.bcrypt_cost = 2;
    raw.logger.format = "xml".into();
    raw.session.refresh_encryption_key = raw.session.encryption_key.clone();
    let err = Config::try_from(raw).unwrap_err().to_string();
    for needle in [
        "socket.port",
        "accounts.bcrypt_cost",
        "logger.format",
        "refresh_encryption_key",
    ] {
        assert!(err.contains(needle), "missing {needle} in {err}");
    }
}

#[test]
fn database_urls_select_the_backend() {
    let dir = std::path::Path::new("/d");
    assert_eq!(
        database_backend("sqlite:/var/lib/m.db", dir).unwrap(),
        DatabaseBackend::Sqlite {
            path: "/var/lib/m.db".into()
        }
    );
    assert!(matches!(
        database_backend("postgres://u:p@h/db", dir).unwrap(),
        DatabaseBackend::Postgres { .. }
    ));
    let err = database_backend("mysql://u:secret@h/db", dir).unwrap_err();
    assert!(!err.contains("secret"), "password must not leak: {err}");
}

#[test]
fn runtime_env_entries_are_key_value_pairs() {
    let mut raw = RawConfig::default();
    raw.runtime.env = vec!["region=eu".into(), "url=https://x?a=b".into()];
    raw.runtime.path = "examples/lua".into();
    let config = Config::try_from(raw).unwrap();
    assert_eq!(config.runtime.env["region"], "eu");
    assert_eq!(config.runtime.env["url"], "https://x?a=b");
    assert_eq!(config.runtime.path, PathBuf::from("examples/lua"));

    let mut raw = RawConfig::default();
    raw.runtime.env = vec!["novalue".into()];
    raw.runtime.call_timeout_ms = 0;
    let error = Config::try_from(raw).unwrap_err().to_string();
    assert!(error.contains("runtime.env entry \"novalue\""), "{error}");
    assert!(error.contains("runtime.call_timeout_ms = 0"), "{error}");
}

#[test]
fn realtime_keys_are_checked_and_reach_their_components() {
    let config = Config::try_from(RawConfig::default()).unwrap();
    assert_eq!(config.socket, metafi_transport::SocketConfig::default());
    assert_eq!(config.realtime, metafi_realtime::RealtimeConfig::default());

    let mut raw = RawConfig::default();
    raw.socket.idle_timeout_ms = 30_000;
    raw.socket.outgoing_queue_size = 16;
    raw.socket.outgoing_queue_bytes = 65_536;
    raw.socket.outgoing_queue_max_age_ms = 2_000;
    raw.session.single_socket = true;
    let config = Config::try_from(raw).unwrap();
    assert_eq!(config.socket.idle_timeout, Some(Duration::from_secs(30)));
    assert_eq!(
        config.realtime.outbox,
        metafi_realtime::OutboxLimits {
            max_bytes: 65_536,
            max_messages: 16,
            max_age: Duration::from_secs(2),
        }
    );
    assert!(config.realtime.single_socket);

    let mut raw = RawConfig::default();
    raw.socket.ping_period_ms = 30_000;
    raw.socket.outgoing_queue_size = 0;
    raw.socket.outgoing_queue_bytes = 100;
    raw.socket.outgoing_queue_max_age_ms = 0;
    raw.socket.max_message_size_bytes = 10;
    let error = Config::try_from(raw).unwrap_err().to_string();
    for needle in [
        "socket.ping_period_ms = 30000 must be less than socket.pong_wait_ms",
        "socket.outgoing_queue_size = 0",
        "socket.outgoing_queue_bytes = 100",
        "socket.outgoing_queue_max_age_ms = 0",
        "socket.max_message_size_bytes = 10",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn js_pool_keys_are_checked_and_reach_the_js_engine() {
    let mut raw = RawConfig::default();
    raw.runtime.js_vms = 3;
    raw.runtime.js_max_calls_per_vm = 2;
    raw.runtime.js_queue_capacity = 50;
    let config = Config::try_from(raw).unwrap();
    let pool = config.runtime.pools["js"];
    assert_eq!(
        (pool.vms, pool.max_calls_per_vm, pool.queue_capacity),
        (3, 2, 50)
    );
    let defaults = Config::try_from(RawConfig::default()).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(
        defaults.runtime.pools["js"].vms,
        4 * cores,
        "0 means four per core"
    );
    assert_eq!(defaults.runtime.pools["js"].max_calls_per_vm, 1);

    let mut raw = RawConfig::default();
    raw.runtime.js_vms = -1;
    raw.runtime.js_max_calls_per_vm = 0;
    raw.runtime.js_queue_capacity = 0;
    let error = Config::try_from(raw).unwrap_err().to_string();
    for needle in [
        "runtime.js_vms = -1",
        "runtime.js_max_calls_per_vm = 0",
        "runtime.js_queue_capacity = 0",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn quic_port_follows_the_api_port_unless_set() {
    let config = Config::try_from(RawConfig::default()).unwrap();
    let quic = config.quic.expect("QUIC is on by default");
    assert_eq!(quic.listen.to_string(), "127.0.0.1:7352");
    assert_eq!(
        quic.cert,
        CertSource::Generated {
            dir: std::path::PathBuf::from("./data").join("quic")
        }
    );

    let mut raw = RawConfig::default();
    raw.socket.port = 0;
    let config = Config::try_from(raw).unwrap();
    assert_eq!(
        config.quic.unwrap().listen.port(),
        0,
        "ephemeral with the API port"
    );

    let raw = load_with(None, &[("METAFI_QUIC_PORT", "9000")], &[]).unwrap();
    assert_eq!(
        Config::try_from(raw).unwrap().quic.unwrap().listen.port(),
        9000
    );

    let mut raw = RawConfig::default();
    raw.quic.enabled = false;
    assert!(Config::try_from(raw).unwrap().quic.is_none());
}

#[test]
fn quic_knobs_reach_the_transport_and_bad_ones_are_named() {
    let mut raw = RawConfig::default();
    raw.quic.redundancy_copies = 2;
    raw.quic.congestion = "bbr".into();
    raw.quic.keep_alive_ms = 0;
    raw.quic.cert_path = "c.pem".into();
    raw.quic.key_path = "k.pem".into();
    let quic = Config::try_from(raw).unwrap().quic.unwrap();
    assert_eq!(quic.transport.tuning.redundancy_copies, 2);
    assert_eq!(
        quic.transport.tuning.congestion,
        metafi_quic::Congestion::Bbr
    );
    assert_eq!(quic.transport.tuning.keep_alive, None);
    assert_eq!(
        quic.transport.tuning.max_message_size_bytes, 4096,
        "socket.max_message_size_bytes applies to QUIC too"
    );
    assert!(matches!(quic.cert, CertSource::Files { .. }));

    let mut raw = RawConfig::default();
    raw.quic.port = 70_000;
    raw.quic.congestion = "vegas".into();
    raw.quic.time_threshold = 0.5;
    raw.quic.max_latest_keys = 0;
    raw.quic.cert_path = "only-the-cert.pem".into();
    raw.quic.keep_alive_ms = 70_000;
    let error = Config::try_from(raw).unwrap_err().to_string();
    for needle in [
        "quic.port = 70000",
        "quic.congestion = \"vegas\"",
        "quic.time_threshold = 0.5",
        "quic.max_latest_keys = 0",
        "quic.cert_path and quic.key_path",
        "quic.keep_alive_ms = 70000",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn script_log_limit_keys_are_checked() {
    let defaults = Config::try_from(RawConfig::default()).unwrap();
    assert_eq!(
        defaults.script_log_limit,
        metafi_runtime::LogLimit {
            lines_per_second: 100,
            burst: 1000
        }
    );
    let mut raw = RawConfig::default();
    raw.runtime.log_lines_per_second = -1;
    raw.runtime.log_burst_lines = 0;
    let error = Config::try_from(raw).unwrap_err().to_string();
    for needle in [
        "runtime.log_lines_per_second = -1",
        "runtime.log_burst_lines = 0",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn quic_port_following_a_huge_socket_port_is_a_problem_not_a_panic() {
    // `quic.port = -1` means socket.port + 2; a socket.port near i64::MAX overflowed that sum.
    let mut raw = RawConfig::default();
    raw.socket.port = i64::MAX;
    let error = Config::try_from(raw).unwrap_err().to_string();
    for needle in [
        "socket.port = 9223372036854775807: must be between 0 and 65535",
        "quic.port = -1 means socket.port + 2, which is past 65535",
    ] {
        assert!(error.contains(needle), "missing {needle} in {error}");
    }
}

#[test]
fn iap_credentials_come_from_nakamas_keys_and_the_environment() {
    let raw = load_with(
        Some("[iap.apple]\nshared_password = \"from-file\"\n"),
        &[("METAFI_IAP_FACEBOOK_INSTANT_APP_SECRET", "from-env")],
        &[("iap.google.client_email", "svc@example.iam")],
    )
    .unwrap();
    let config = Config::try_from(raw).unwrap();
    assert_eq!(config.iap.apple.shared_password, "from-file");
    assert_eq!(config.iap.facebook_instant.app_secret, "from-env");
    assert_eq!(config.iap.google.client_email, "svc@example.iam");
}

#[test]
fn the_verified_token_cache_size_is_checked_and_zero_turns_it_off() {
    let mut raw = RawConfig::default();
    assert_eq!(
        Config::try_from(raw.clone())
            .unwrap()
            .session
            .verified_token_cache_size,
        16_384
    );
    raw.session.verified_token_cache_size = 0;
    assert_eq!(
        Config::try_from(raw.clone())
            .unwrap()
            .session
            .verified_token_cache_size,
        0
    );
    raw.session.verified_token_cache_size = -1;
    let error = Config::try_from(raw).unwrap_err().to_string();
    assert!(
        error.contains("session.verified_token_cache_size = -1: must be between 0 and 1000000"),
        "{error}"
    );
}
