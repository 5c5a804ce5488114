//! `/ws`: protocol v1 over WebSocket. Each text frame is one message; the frames are bridged
//! to an in-memory byte stream served by the same connection handler as TCP bots, so auth,
//! clocks, reconnects and errors are the same. Lines are stamped when read (there are no
//! kernel receive stamps for frames).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::io::AsyncWriteExt;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::codec::{FramedRead, LinesCodec};

use crate::protocol::MAX_LINE_BYTES;
use crate::server::connection::{serve_stream, UnstampedRead};

use super::{peer_of, ApiError, WebContext};

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
    info: ConnectInfo<SocketAddr>,
) -> Result<Response, ApiError> {
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
    let peer = peer_of(&info);
    Ok(upgrade
        .max_message_size(MAX_FRAME_BYTES)
        .on_upgrade(move |socket| bridge(socket, context, peer, slot)))
}

async fn bridge(
    socket: WebSocket,
    context: WebContext,
    peer: SocketAddr,
    _slot: OwnedSemaphorePermit,
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
