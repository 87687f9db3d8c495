//! TCP connections as the client opens them: spread over several local source addresses (one
//! address has only ~28k ephemeral ports towards one server), with `TCP_NODELAY`, and wrapped so
//! every byte sent and received is counted at the socket layer.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};

/// Bytes moved through every connection that shares these counters.
#[derive(Debug, Default)]
pub struct NetCounters {
    sent: AtomicU64,
    received: AtomicU64,
}

impl NetCounters {
    /// Total bytes written to sockets so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Total bytes read from sockets so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// A stream whose reads and writes are added to [`NetCounters`].
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    counters: Arc<NetCounters>,
}

impl<S> Counted<S> {
    pub fn new(inner: S, counters: Arc<NetCounters>) -> Counted<S> {
        Counted { inner, counters }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            self.counters
                .received
                .fetch_add(read as u64, Ordering::Relaxed);
        }
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = &poll {
            self.counters
                .sent
                .fetch_add(*written as u64, Ordering::Relaxed);
        }
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(written)) = &poll {
            self.counters
                .sent
                .fetch_add(*written as u64, Ordering::Relaxed);
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Opens counted TCP connections to one server, taking local source addresses in turn.
#[derive(Debug)]
pub struct Connector {
    server: SocketAddr,
    sources: Vec<IpAddr>,
    next_source: AtomicUsize,
    counters: Arc<NetCounters>,
}

impl Connector {
    /// `sources` empty lets the kernel choose the source address.
    pub fn new(server: SocketAddr, sources: Vec<IpAddr>, counters: Arc<NetCounters>) -> Connector {
        Connector {
            server,
            sources,
            next_source: AtomicUsize::new(0),
            counters,
        }
    }

    pub fn server(&self) -> SocketAddr {
        self.server
    }

    pub fn counters(&self) -> &Arc<NetCounters> {
        &self.counters
    }

    /// A new connection, from the next source address.
    pub async fn connect(&self) -> io::Result<Counted<TcpStream>> {
        let socket = if self.server.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if !self.sources.is_empty() {
            let turn = self.next_source.fetch_add(1, Ordering::Relaxed) % self.sources.len();
            socket.bind(SocketAddr::new(self.sources[turn], 0))?;
        }
        let stream = socket.connect(self.server).await?;
        stream.set_nodelay(true)?;
        Ok(Counted::new(stream, self.counters.clone()))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    #[tokio::test]
    async fn counts_bytes_both_ways_and_uses_the_source_address() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let server = listener.local_addr().expect("addr");
        let echo = tokio::spawn(async move {
            let (mut peer, from) = listener.accept().await.expect("accept");
            let mut buf = [0u8; 5];
            peer.read_exact(&mut buf).await.expect("read");
            peer.write_all(b"hello world").await.expect("write");
            from
        });
        let counters = Arc::new(NetCounters::default());
        let connector = Connector::new(
            server,
            vec!["127.0.0.3".parse().expect("ip")],
            counters.clone(),
        );
        let mut stream = connector.connect().await.expect("connect");
        stream.write_all(b"12345").await.expect("write");
        let mut answer = [0u8; 11];
        stream.read_exact(&mut answer).await.expect("read");
        let from = echo.await.expect("join");
        assert_eq!(from.ip().to_string(), "127.0.0.3");
        assert_eq!(counters.sent(), 5);
        assert_eq!(counters.received(), 11);
    }
}
