//! `/ws`: protocol v1 over WebSocket. Each text frame is one message; the frames are bridged
//! to an in-memory byte stream served by the same connection handler as TCP bots, so auth,
//! clocks, reconnects and errors are the same. Lines are stamped when read (there are no
//! kernel receive stamps for frames).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::codec::{FramedRead, LinesCodec};

use crate::protocol::MAX_LINE_BYTES;
use crate::server::address::AddressShare;
use crate::server::connection::{serve_stream, UnstampedRead};

use super::{ApiError, ClientAddr, WebContext};

/// Connection ids of WebSocket bots: far above the TCP listener's, which count from 1.
static NEXT_ID: AtomicU64 = AtomicU64::new(1 << 62);

/// Bytes buffered between the WebSocket and the connection handler, each way.
const BRIDGE_BYTES: usize = 64 * 1024;

/// Frames larger than this close the socket; smaller ones over the line cap get the protocol's
/// `line_too_long` error, as over TCP.
const MAX_FRAME_BYTES: usize = 4 * MAX_LINE_BYTES;

pub async fn upgrade(
    upgrade: WebSocketUpgrade,
    State(context): State<WebContext>,
    ClientAddr(peer): ClientAddr,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !origin_allowed(&headers, &context.config.server.web_allowed_origins) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "WebSocket logins are taken only from this site's own pages (server.web_allowed_origins)",
        ));
    }
    let share = context
        .socket_shares
        .try_take(peer.ip())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "this address has too many WebSocket bots connected (server.web_max_sockets_per_address)",
            )
        })?;
    let slot = context
        .socket_slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many WebSocket bots connected (server.web_max_sockets)",
            )
        })?;
    Ok(upgrade
        .max_message_size(MAX_FRAME_BYTES)
        .on_upgrade(move |socket| bridge(socket, context, peer, (slot, share))))
}

/// Whether a WebSocket request may log in: a browser always sends `Origin`, and it must be this
/// site (the `Host` it asked for) or one of `allowed`; a hostile page elsewhere cannot then log
/// in (or fail logins) with a visitor's address. Programs that send no `Origin` are not
/// browsers and are let through (they have the address anyway).
fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.trim_end_matches('/');
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    !host.is_empty() && origin_host.is_some_and(|o| o.eq_ignore_ascii_case(host))
}

async fn bridge(
    socket: WebSocket,
    context: WebContext,
    peer: SocketAddr,
    _slots: (OwnedSemaphorePermit, AddressShare),
) {
    let (server_end, bridge_end) = tokio::io::duplex(BRIDGE_BYTES);
    let (server_read, server_write) = tokio::io::split(server_end);
    let conn_id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let served = tokio::spawn(serve_stream(
        context.connections.clone(),
        UnstampedRead(server_read),
        server_write,
        peer,
        conn_id,
    ));
    let (bridge_read, mut bridge_write) = tokio::io::split(bridge_end);
    let (mut to_browser, mut from_browser) = socket.split();
    // Browser → handler: one line per text frame (line breaks inside a frame are JSON
    // whitespace, so they become spaces).
    let inbound = tokio::spawn(async move {
        while let Some(Ok(message)) = from_browser.next().await {
            let text = match message {
                Message::Text(text) => text.as_str().replace(['\n', '\r'], " "),
                Message::Binary(bytes) => {
                    String::from_utf8_lossy(&bytes).replace(['\n', '\r'], " ")
                }
                Message::Close(_) => break,
                _ => continue,
            };
            if bridge_write.write_all(text.as_bytes()).await.is_err()
                || bridge_write.write_all(b"\n").await.is_err()
            {
                break;
            }
        }
        let _ = bridge_write.shutdown().await;
    });
    // Handler → browser: one text frame per line. The handler's writer blocks on a full bridge
    // like on a full socket, so a browser that does not read is dropped as a TCP bot would be.
    let mut lines = FramedRead::new(
        bridge_read,
        LinesCodec::new_with_max_length(MAX_FRAME_BYTES),
    );
    while let Some(Ok(line)) = lines.next().await {
        if to_browser.send(Message::Text(line.into())).await.is_err() {
            break;
        }
    }
    let _ = to_browser.close().await;
    inbound.abort();
    let _ = served.await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(origin: Option<&'static str>, host: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static(host));
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_static(origin));
        }
        headers
    }

    #[test]
    fn only_this_sites_pages_and_the_allowed_origins_may_open_a_websocket() {
        let allowed = vec!["https://league.example.org".to_string()];
        let ok = |origin, host| origin_allowed(&headers(origin, host), &allowed);
        assert!(ok(Some("http://127.0.0.1:8080"), "127.0.0.1:8080"));
        assert!(ok(Some("https://Arena.Example.org"), "arena.example.org"));
        assert!(ok(Some("https://league.example.org"), "10.0.0.5:8080"));
        assert!(ok(None, "127.0.0.1:8080"), "not a browser");
        assert!(!ok(Some("https://evil.example.com"), "127.0.0.1:8080"));
        assert!(!ok(Some("http://127.0.0.1:9999"), "127.0.0.1:8080"));
        assert!(!ok(Some("null"), "127.0.0.1:8080"));
        assert!(!ok(
            Some("http://127.0.0.1:8080.evil.com"),
            "127.0.0.1:8080"
        ));
    }
}
