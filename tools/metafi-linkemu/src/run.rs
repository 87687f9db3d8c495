//! `run`: the devices, the namespaces' addresses and routes, and the forwarding loop.
//!
//! Each TUN device is created in the emulator's own namespace, then moved into its target
//! namespace with `ip link set … netns …` (the open descriptor stays attached to it), and
//! configured there with `ip -n`. Only IPv4 packets between the server address and the
//! client addresses are forwarded; anything else is counted and dropped, so nothing leaves
//! the two namespaces.

use std::io::Write as _;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use metafi_linkemu::{Direction, Network, NetworkConfig, NetworkStats, Offer};
use serde::Serialize;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;
use tun_rs::{AsyncDevice, DeviceBuilder};

use crate::RunArgs;

/// Largest packet the devices carry.
const MTU: u16 = 1500;

/// Packets the emulator did not forward for a reason other than the link models.
#[derive(Debug, Default, Serialize)]
struct Refused {
    not_ipv4: u64,
    foreign_address: u64,
    write_errors: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    seconds: f64,
    seed: u64,
    client_up: String,
    client_down: String,
    server_up: String,
    server_down: String,
    setup_link: Option<String>,
    /// Times the measured links were switched on (1 without a setup link).
    measured_phases: u64,
    /// Counted only while the measured links were on.
    network: NetworkStats,
    refused: Refused,
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    if args.clients == 0 || args.clients > 65_000 {
        bail!("--clients must be 1–65000");
    }
    let server = create(&args.server_dev)?;
    let client = create(&args.client_dev)?;
    configure(&args).context("configuring the namespaces")?;
    let first = u32::from(args.first_client);
    let last = first + args.clients - 1;
    let is_client = |a: Ipv4Addr| (first..=last).contains(&u32::from(a));

    let measured = NetworkConfig {
        client_up: args.client_up.clone(),
        client_down: args.client_down.clone(),
        server_up: args.server_up.clone(),
        server_down: args.server_down.clone(),
        seed: args.seed,
    };
    let setup = args.setup_link.as_ref().map(|link| NetworkConfig {
        client_up: link.clone(),
        client_down: link.clone(),
        server_up: link.clone(),
        server_down: link.clone(),
        seed: args.seed,
    });
    let mut network: Network<Vec<u8>> = Network::new(measured.clone());
    if let Some(setup) = &setup {
        network.reconfigure(setup.clone(), false);
    }
    let mut measured_phases = u64::from(setup.is_none());
    let mut to_measured =
        signal(SignalKind::user_defined1()).context("installing SIGUSR1 handler")?;
    let mut to_setup = signal(SignalKind::user_defined2()).context("installing SIGUSR2 handler")?;
    let mut refused = Refused::default();
    let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
    // Ready only once the signal handlers are in place.
    if let Some(path) = &args.ready_file {
        std::fs::write(path, "ready\n")
            .with_context(|| format!("writing the ready file {}", path.display()))?;
    }
    let start = Instant::now();
    let now_ns = || u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut from_server = vec![0u8; usize::from(MTU) + 64];
    let mut from_client = vec![0u8; usize::from(MTU) + 64];
    let far_future = Instant::now() + Duration::from_secs(86_400 * 365);
    loop {
        let wake = network
            .next_event()
            .map_or(far_future, |t| start + Duration::from_nanos(t));
        tokio::select! {
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
            _ = to_measured.recv() => {
                network.reconfigure(measured.clone(), true);
                measured_phases += 1;
            }
            _ = to_setup.recv() => {
                if let Some(setup) = &setup {
                    network.reconfigure(setup.clone(), false);
                }
            }
            read = server.recv(&mut from_server) => {
                let len = read.context("reading the server device")?;
                let packet = &from_server[..len];
                match addresses(packet) {
                    None => refused.not_ipv4 += 1,
                    Some((source, destination)) if source == args.server_addr && is_client(destination) => {
                        let _: Offer = network.offer(now_ns(), Direction::ToClient, destination, len, packet.to_vec());
                    }
                    Some(_) => refused.foreign_address += 1,
                }
            }
            read = client.recv(&mut from_client) => {
                let len = read.context("reading the client device")?;
                let packet = &from_client[..len];
                match addresses(packet) {
                    None => refused.not_ipv4 += 1,
                    Some((source, destination)) if destination == args.server_addr && is_client(source) => {
                        let _: Offer = network.offer(now_ns(), Direction::ToServer, source, len, packet.to_vec());
                    }
                    Some(_) => refused.foreign_address += 1,
                }
            }
            () = tokio::time::sleep_until(wake) => {}
        }
        network.poll(now_ns(), Vec::len, |direction, packet| {
            let device = match direction {
                Direction::ToServer => &server,
                Direction::ToClient => &client,
            };
            if device.try_send(&packet).is_err() {
                refused.write_errors += 1;
            }
        });
    }
    let report = Report {
        seconds: start.elapsed().as_secs_f64(),
        seed: args.seed,
        client_up: args.client_up.to_string(),
        client_down: args.client_down.to_string(),
        server_up: args.server_up.to_string(),
        server_down: args.server_down.to_string(),
        setup_link: args.setup_link.as_ref().map(ToString::to_string),
        measured_phases,
        network: network.stats(),
        refused,
    };
    print_report(&report);
    if let Some(path) = &args.stats {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json)
            .with_context(|| format!("writing statistics to {}", path.display()))?;
    }
    Ok(())
}

fn create(name: &str) -> anyhow::Result<AsyncDevice> {
    DeviceBuilder::new()
        .name(name)
        .mtu(MTU)
        .packet_information(false)
        .build_async()
        .with_context(|| {
            format!(
                "creating TUN device {name}: needs root (CAP_NET_ADMIN) and /dev/net/tun, and no \
                 device of that name (pick another with --server-dev/--client-dev)"
            )
        })
}

/// Moves the devices into their namespaces and gives them addresses and routes.
fn configure(args: &RunArgs) -> anyhow::Result<()> {
    let (srv, cli) = (&args.server_ns, &args.client_ns);
    let (sdev, cdev) = (&args.server_dev, &args.client_dev);
    for ns in [srv, cli] {
        ip(&["netns", "exec", ns, "true"]).with_context(|| {
            format!("network namespace {ns} does not exist: create it with `ip netns add {ns}`")
        })?;
    }
    ip(&["link", "set", sdev, "netns", srv])?;
    ip(&["link", "set", cdev, "netns", cli])?;
    let server = args.server_addr.to_string();
    let first = u32::from(args.first_client);
    // Server side: its address, and a route to every client through the device.
    let mut batch =
        format!("link set lo up\nlink set {sdev} up\naddr add {server}/32 dev {sdev}\n");
    for i in 0..args.clients {
        batch.push_str(&format!(
            "route add {}/32 dev {sdev}\n",
            Ipv4Addr::from(first + i)
        ));
    }
    ip_batch(srv, &batch)?;
    // Client side: one address per client, and the route to the server.
    let mut batch = format!("link set lo up\nlink set {cdev} up\n");
    for i in 0..args.clients {
        batch.push_str(&format!(
            "addr add {}/32 dev {cdev}\n",
            Ipv4Addr::from(first + i)
        ));
    }
    batch.push_str(&format!("route add {server}/32 dev {cdev}\n"));
    ip_batch(cli, &batch)?;
    Ok(())
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .context("running `ip` (package iproute2)")?;
    if !output.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

fn ip_batch(ns: &str, commands: &str) -> anyhow::Result<()> {
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .context("running `ip` (package iproute2)")?;
    child
        .stdin
        .take()
        .context("ip's standard input")?
        .write_all(commands.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "configuring namespace {ns} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Source and destination of an IPv4 packet.
fn addresses(packet: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return None;
    }
    let source = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
    let destination = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
    Some((source, destination))
}

#[allow(clippy::print_stdout)] // the statistics are the command's output
fn print_report(report: &Report) {
    println!(
        "metafi-linkemu: {:.1} s, seed {}, {} clients, {} measured phase(s) (counted below)",
        report.seconds, report.seed, report.network.clients, report.measured_phases
    );
    println!(
        "{:<12} {:>10} {:>12} {:>10} {:>12} {:>10} {:>10} {:>10}",
        "hop",
        "offered",
        "offered B",
        "delivered",
        "delivered B",
        "queue drop",
        "loss drop",
        "max queue"
    );
    let rows = [
        ("client up", &report.client_up, &report.network.client_up),
        ("server up", &report.server_up, &report.network.server_up),
        (
            "server down",
            &report.server_down,
            &report.network.server_down,
        ),
        (
            "client down",
            &report.client_down,
            &report.network.client_down,
        ),
    ];
    for (name, _, s) in rows {
        println!(
            "{:<12} {:>10} {:>12} {:>10} {:>12} {:>10} {:>10} {:>10}",
            name,
            s.offered_packets,
            s.offered_bytes,
            s.delivered_packets,
            s.delivered_bytes,
            s.dropped_queue,
            s.dropped_loss,
            s.max_queue_packets
        );
    }
    for (name, spec, _) in rows {
        println!("  {name}: {spec}");
    }
    println!(
        "not forwarded: {} not IPv4, {} foreign address, {} write errors",
        report.refused.not_ipv4, report.refused.foreign_address, report.refused.write_errors
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_from_ipv4_headers_only() {
        let mut packet = vec![0u8; 20];
        packet[0] = 0x45;
        packet[12..16].copy_from_slice(&[10, 77, 1, 1]);
        packet[16..20].copy_from_slice(&[10, 77, 0, 1]);
        assert_eq!(
            addresses(&packet),
            Some((Ipv4Addr::new(10, 77, 1, 1), Ipv4Addr::new(10, 77, 0, 1)))
        );
        packet[0] = 0x60;
        assert_eq!(addresses(&packet), None);
        assert_eq!(addresses(&[0x45; 10]), None);
    }
}
