#![allow(clippy::unwrap_used)] // tests: a panic is the failure report
//! Smoke test of the real emulator: two namespaces, UDP probes across the emulated links.
//! Needs root, `/dev/net/tun` and `ip`; without them it says so on stderr and checks
//! nothing (CI machines without CAP_NET_ADMIN).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_metafi-linkemu");

/// Why the test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root (needs CAP_NET_ADMIN for namespaces and TUN devices)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("`ip` (iproute2) is not installed".into()),
    }
}

/// Namespaces made for one test, removed on drop (even when the test fails).
struct Namespaces {
    server: String,
    client: String,
    emulator: Option<Child>,
}

impl Namespaces {
    fn new(tag: &str) -> Namespaces {
        let id = std::process::id();
        let ns = Namespaces {
            server: format!("lemu-t{id}-{tag}s"),
            client: format!("lemu-t{id}-{tag}c"),
            emulator: None,
        };
        for name in [&ns.server, &ns.client] {
            let status = Command::new("ip")
                .args(["netns", "add", name])
                .status()
                .unwrap();
            assert!(status.success(), "ip netns add {name}");
        }
        ns
    }

    fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", ns, BIN]).args(args);
        command
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        if let Some(mut child) = self.emulator.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for name in [&self.server, &self.client] {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

fn wait_for(path: &Path, what: &str) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what} never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn probes_cross_the_emulated_links_with_their_delay() {
    if let Some(reason) = missing_prerequisite() {
        eprintln!("SKIPPED probes_cross_the_emulated_links_with_their_delay: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    let stats = dir.path().join("stats.json");
    let mut ns = Namespaces::new("a");
    let id = std::process::id() % 100_000;
    let emulator = Command::new(BIN)
        .args(["run", "--server-ns", &ns.server, "--client-ns", &ns.client])
        .args(["--clients", "2", "--seed", "5"])
        .args([
            "--server-dev",
            &format!("lt{id}s"),
            "--client-dev",
            &format!("lt{id}c"),
        ])
        .args(["--client-up", "rate=1mbit,delay=20ms"])
        .args(["--client-down", "rate=1mbit,delay=20ms"])
        .args(["--server-up", "rate=1mbit,delay=20ms"])
        .args(["--server-down", "rate=1mbit,delay=20ms"])
        .arg("--ready-file")
        .arg(&ready)
        .arg("--stats")
        .arg(&stats)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    ns.emulator = Some(emulator);
    wait_for(&ready, "the emulator's ready file");

    let mut echo = ns
        .exec(
            &ns.server,
            &[
                "probe-echo",
                "--bind",
                "10.77.0.1:7999",
                "--duration",
                "20s",
            ],
        )
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let probe = ns
        .exec(
            &ns.client,
            &[
                "probe",
                "--to",
                "10.77.0.1:7999",
                "--from",
                "10.77.1.2",
                "--count",
                "10",
                "--interval",
                "10ms",
                "--size",
                "100",
            ],
        )
        .output()
        .unwrap();
    let _ = echo.kill();
    let _ = echo.wait();
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&probe.stdout).unwrap();
    assert_eq!(report["received"], 10, "{report}");
    // Four hops of 20 ms, plus 128 bytes at 1 Mbit/s (about 1 ms) on each.
    let min = report["rtt_min_ms"].as_f64().unwrap();
    let max = report["rtt_max_ms"].as_f64().unwrap();
    assert!(
        min >= 84.0,
        "round trip {min} ms is shorter than the links allow"
    );
    assert!(
        max < 400.0,
        "round trip {max} ms: the emulator is far too slow"
    );

    // SIGINT: the emulator prints and writes its statistics.
    let mut child = ns.emulator.take().unwrap();
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(
        stats["network"]["server_up"]["delivered_packets"], 10,
        "{stats}"
    );
    assert_eq!(
        stats["network"]["client_down"]["delivered_packets"], 10,
        "{stats}"
    );
}
