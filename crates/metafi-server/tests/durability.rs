//! Acknowledged writes survive `kill -9` of the real `metafi` binary.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_registrations_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = spawn_metafi(&data);
    let base = wait_ready(&mut child);

    // Register devices from many concurrent tasks until the server is killed; remember every
    // device whose registration was acknowledged with 200.
    let client = reqwest::Client::new();
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for worker in 0..32 {
        let (client, base, acked, stop) =
            (client.clone(), base.clone(), acked.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let device = format!("durable-{worker}-{n}-xxxxxxxx");
                n += 1;
                let sent = client
                    .post(format!("{base}/v2/account/authenticate/device?create=true"))
                    .basic_auth("defaultkey", Some(""))
                    .json(&serde_json::json!({"id": device}))
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().as_u16() == 200 => acked.lock().unwrap().push(device),
                    _ => {}
                }
            }
        }));
    }
    // Kill mid-stream once enough writes were acknowledged to mean something (a count, not a
    // guess at how many a second this machine manages); the timeout is a hang guard.
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while acked.lock().unwrap().len() <= 200 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the server acknowledged too few registrations before the hang guard");
    child.kill().expect("SIGKILL the server"); // Child::kill sends SIGKILL on Unix.
    let _ = child.wait();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert!(
        acked.len() > 50,
        "the load generated too few writes ({}) to mean anything",
        acked.len()
    );

    let mut child = spawn_metafi(&data);
    let base = wait_ready(&mut child);
    for device in &acked {
        let reply = client
            .post(format!(
                "{base}/v2/account/authenticate/device?create=false"
            ))
            .basic_auth("defaultkey", Some(""))
            .json(&serde_json::json!({"id": device}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            reply.status().as_u16(),
            200,
            "acknowledged device {device} was lost"
        );
    }
    child.kill().unwrap();
    let _ = child.wait();
}

fn spawn_metafi(data: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_metafi"))
        .args([
            "serve",
            "--port",
            "0",
            "--metrics-port",
            "0",
            "--console-port",
            "0",
            "--data-dir",
        ])
        .arg(data)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the metafi binary")
}

/// Reads the server's log until it is ready; returns its base URL.
fn wait_ready(child: &mut std::process::Child) -> String {
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("metafi is ready") {
            let addr = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("address="))
                .expect("ready line names the address");
            // Keep draining the log so the server never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return format!("http://{addr}");
        }
    }
    panic!("metafi exited before becoming ready");
}
