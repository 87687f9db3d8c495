//! The QUIC listener: the same realtime sessions as `/ws` over QUIC/UDP (docs/TRANSPORT.md).

use std::sync::Arc;

use anyhow::Context;
use metafi_core::Sessions;
use metafi_quic::cert::ServerCert;
use metafi_realtime::Realtime;
use metafi_transport::quic::{QuicServer, QuicState};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{CertSource, QuicSettings};
use crate::node::stopped;

/// A started QUIC listener: the server (to finish its connections) and its accept task.
#[derive(Debug)]
pub(crate) struct QuicEdge {
    server: Arc<QuicServer>,
    task: JoinHandle<()>,
}

impl QuicEdge {
    /// Loads (or generates) the certificate, logs its fingerprint, and starts accepting until
    /// `stop` is raised.
    pub(crate) fn start(
        settings: &QuicSettings,
        socket: std::net::UdpSocket,
        realtime: &Arc<Realtime>,
        sessions: &Arc<Sessions>,
        stop: watch::Receiver<bool>,
    ) -> anyhow::Result<QuicEdge> {
        let cert = match &settings.cert {
            CertSource::Files { cert, key } => {
                ServerCert::from_pem_files(cert, key).with_context(|| {
                    "loading the QUIC certificate (quic.cert_path, quic.key_path)".to_owned()
                })?
            }
            CertSource::Generated { dir } => {
                let mut names = vec!["localhost".to_owned()];
                if !settings.listen.ip().is_unspecified() {
                    names.push(settings.listen.ip().to_string());
                }
                ServerCert::load_or_generate(dir, &names).with_context(|| {
                    format!(
                        "preparing the self-signed QUIC certificate in {} (or set quic.cert_path and quic.key_path)",
                        dir.display()
                    )
                })?
            }
        };
        let server = QuicServer::new(socket, &cert, &settings.transport)
            .context("starting the QUIC listener")?;
        let address = server.local_addr()?;
        tracing::info!(
            %address,
            fingerprint = %cert.fingerprint,
            generated = cert.generated,
            cert_bytes = cert.chain_bytes(),
            "QUIC listening"
        );
        let server = Arc::new(server);
        let state = QuicState {
            realtime: realtime.clone(),
            sessions: sessions.clone(),
            config: Arc::new(settings.transport.clone()),
        };
        let task = tokio::spawn({
            let server = server.clone();
            async move { server.serve(state, stopped(stop)).await }
        });
        Ok(QuicEdge { server, task })
    }

    /// Waits for the accept loop (the stop flag is raised), then closes every connection once
    /// its queued messages are acknowledged, waiting at most `grace`.
    pub(crate) async fn finish(self, grace: std::time::Duration) {
        let _ = self.task.await;
        self.server.finish(grace).await;
    }
}
