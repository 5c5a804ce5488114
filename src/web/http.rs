//! The web port's connections: an accept loop with a cap on open connections and a share per
//! address, HTTP/1.1 served by hyper with a header timeout (which also ends idle keep-alive
//! connections) and a request head size cap, and a write timeout on every socket so that a
//! reader that stopped (an event stream, a WebSocket) is dropped. Each request carries the
//! peer's address as axum's `ConnectInfo`.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::ServerConfig;
use crate::server::address::{AddressShare, AddressShares};
use crate::server::log_summary::LogSummary;

/// Fewest bytes hyper accepts as its read buffer.
const MIN_REQUEST_BYTES: usize = 8192;
/// Most header lines in one request.
const MAX_HEADERS: usize = 64;
/// How long a connection may take to finish its answer once the server stops.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The limits of the web port (from `[server]`).
#[derive(Debug, Clone)]
pub struct HttpLimits {
    pub max_connections: usize,
    pub per_address: usize,
    pub header_timeout: Duration,
    pub write_timeout: Duration,
    pub max_request_bytes: usize,
    /// Reverse proxies: they carry many clients, so only the total cap applies to them.
    pub trusted_proxies: Vec<IpAddr>,
}

impl HttpLimits {
    pub fn of(server: &ServerConfig) -> HttpLimits {
        HttpLimits {
            max_connections: server.web_max_connections,
            per_address: server.web_max_connections_per_address,
            header_timeout: Duration::from_millis(server.web_header_timeout_ms),
            write_timeout: Duration::from_millis(server.web_write_timeout_ms),
            max_request_bytes: server.web_max_request_bytes.max(MIN_REQUEST_BYTES),
            trusted_proxies: server.trusted_proxies.clone(),
        }
    }
}

/// Serves `app` on `listener` until `stop`, then lets each connection finish its answer.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    refusals: Arc<LogSummary>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let shares = AddressShares::new(limits.per_address);
    let mut connections = JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (socket, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // E.g. out of file descriptors: back off instead of spinning.
                tracing::warn!(error = %e, "web view: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let share = if limits.trusted_proxies.contains(&peer.ip()) {
            None
        } else {
            match shares.try_take(peer.ip()) {
                Some(share) => Some(share),
                None => {
                    refusals.note(
                        peer.ip(),
                        "web connection refused: the address holds its share of connections",
                    );
                    continue;
                }
            }
        };
        connections.spawn(serve_connection(
            socket,
            peer,
            app.clone(),
            limits.clone(),
            stop.clone(),
            (permit, share),
        ));
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

async fn serve_connection(
    socket: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: HttpLimits,
    stop: CancellationToken,
    _slots: (OwnedSemaphorePermit, Option<AddressShare>),
) {
    let _ = socket.set_nodelay(true);
    let io = TokioIo::new(WriteTimeout::new(socket, limits.write_timeout));
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        app.clone().oneshot(request.map(Body::new))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_request_bytes)
        .max_headers(MAX_HEADERS);
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => {
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "web connection ended");
            }
        }
        _ = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(STOP_GRACE, connection).await;
        }
    }
}

/// A socket whose writes fail once one has waited `limit` for the peer to take bytes: a client
/// that stopped reading is dropped instead of holding its connection (and its answer's
/// resources) for ever.
struct WriteTimeout<T> {
    inner: T,
    limit: Duration,
    /// Running while a write waits.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    fn new(inner: T, limit: Duration) -> WriteTimeout<T> {
        WriteTimeout {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a write that got `polled` answers: its result (the wait is over), or pending until
    /// the wait passes `limit`.
    fn watch<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took no bytes within the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_takes_fails_after_the_limit() {
        // A pipe of 64 bytes whose other end is never read.
        let (near, _far) = tokio::io::duplex(64);
        let mut writer = WriteTimeout::new(near, Duration::from_secs(20));
        writer.write_all(&[0; 64]).await.unwrap();
        let started = tokio::time::Instant::now();
        let stalled = writer.write_all(&[0; 64]).await.unwrap_err();
        assert_eq!(stalled.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_but_steady_reader_is_never_timed_out() {
        let (near, mut far) = tokio::io::duplex(64);
        let mut writer = WriteTimeout::new(near, Duration::from_secs(20));
        let reader = tokio::spawn(async move {
            let mut buf = [0; 64];
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_secs(15)).await;
                let _ = tokio::io::AsyncReadExt::read(&mut far, &mut buf).await;
            }
        });
        for _ in 0..10 {
            writer.write_all(&[0; 64]).await.unwrap();
        }
        reader.await.unwrap();
    }
}
