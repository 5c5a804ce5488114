//! The bot side of a connection to the referee, shared by every bot this crate runs (`arena
//! bot` and the server's built-in engines, the `arena connect` bridge, the bench's load
//! generator): connect over TCP (no Nagle delay), send `hello`, and wait for `welcome`, checking
//! the protocol version and answering pings meanwhile. One handshake, one set of errors.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use crate::log_text::peer_message;
use crate::protocol::{
    parse_referee_line, BotMessage, CappedLineCodec, ErrorCode, Frame, RefereeMessage,
    MAX_LINE_BYTES, PROTOCOL_VERSION,
};

/// A bot's connection to the referee: lines of at most 64 KiB both ways.
pub type RefereeLink = Framed<TcpStream, CappedLineCodec>;

/// Why the handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("could not connect to {server}: {error}")]
    Connect {
        server: String,
        error: std::io::Error,
    },
    #[error("timed out after {0:?} waiting for the referee")]
    Timeout(Duration),
    /// The referee answered `hello` with `error` (code and message).
    #[error("the referee refused the bot: {}", peer_message(.0))]
    Refused(String),
    /// The referee is rate-limiting logins to this bot name: worth trying again in a second.
    #[error("the referee asks to try again: {}", peer_message(.0))]
    Throttled(String),
    #[error("the referee closed the connection before answering hello")]
    Closed,
    /// The address answered `hello` with an HTTP status line: a web server (most likely the
    /// arena's web view) is listening there, not the referee.
    #[error(
        "this address is a web server (it answered `{}`), not the referee: probably the web \
         view's port. Bots connect to the referee's address, `server.listen` in the arena's \
         config (port 7878 by default)",
        peer_message(.0)
    )]
    WebServer(String),
    /// The referee answered `hello` with `error` `league_over`: nothing more to play there.
    #[error("{}", peer_message(.0))]
    LeagueOver(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
}

impl HandshakeError {
    /// Whether trying again later may succeed: not after a refusal, at a web server's
    /// address, or once the league is over.
    pub fn worth_retrying(&self) -> bool {
        match self {
            HandshakeError::Connect { .. }
            | HandshakeError::Timeout(_)
            | HandshakeError::Throttled(_)
            | HandshakeError::Closed
            | HandshakeError::Protocol(_)
            | HandshakeError::Io(_) => true,
            HandshakeError::Refused(_)
            | HandshakeError::WebServer(_)
            | HandshakeError::LeagueOver(_) => false,
        }
    }
}

/// What the referee's `welcome` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcomed {
    /// The server's name.
    pub server: String,
    /// The login ticket to send in later `hello`s of this bot name, if the referee gave one.
    pub ticket: Option<String>,
}

/// Connects to `server`, says `hello` and waits for `welcome`, each step within `limit`.
/// Returns the link and what `welcome` said.
pub async fn connect_and_hello(
    server: &str,
    hello: &BotMessage,
    limit: Duration,
) -> Result<(RefereeLink, Welcomed), HandshakeError> {
    let stream = match tokio::time::timeout(limit, TcpStream::connect(server)).await {
        Err(_) => return Err(HandshakeError::Timeout(limit)),
        Ok(Err(error)) => {
            return Err(HandshakeError::Connect {
                server: server.to_string(),
                error,
            })
        }
        Ok(Ok(stream)) => stream,
    };
    // Moves are small lines and latency matters more than throughput.
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
    let mut link = Framed::new(stream, CappedLineCodec::new(MAX_LINE_BYTES));
    let welcomed = hello_over(&mut link, hello, limit).await?;
    Ok((link, welcomed))
}

/// Says `hello` on an open line link (a TCP connection, or stdin/stdout when an engine is run
/// by a bridge) and waits for `welcome`, each step within `limit`. Returns what it said.
pub async fn hello_over<L>(
    link: &mut L,
    hello: &BotMessage,
    limit: Duration,
) -> Result<Welcomed, HandshakeError>
where
    L: LineLink,
{
    tokio::time::timeout(limit, link.send(hello.to_line()))
        .await
        .map_err(|_| HandshakeError::Timeout(limit))??;
    tokio::time::timeout(limit, wait_for_welcome(link))
        .await
        .map_err(|_| HandshakeError::Timeout(limit))?
}

/// A bot's line link to a referee, whatever carries it: frames in, lines out.
pub trait LineLink:
    futures_util::Stream<Item = Result<Frame, std::io::Error>>
    + futures_util::Sink<String, Error = std::io::Error>
    + Unpin
{
}

impl<T> LineLink for T where
    T: futures_util::Stream<Item = Result<Frame, std::io::Error>>
        + futures_util::Sink<String, Error = std::io::Error>
        + Unpin
{
}

/// Reads until `welcome` (returning what it said); `error` means the hello was refused; a
/// `ping` is answered; anything else is a protocol error.
async fn wait_for_welcome<L: LineLink>(link: &mut L) -> Result<Welcomed, HandshakeError> {
    loop {
        let line = match link.next().await {
            None => return Err(HandshakeError::Closed),
            Some(Err(e)) => return Err(HandshakeError::Io(e)),
            Some(Ok(Frame::Line(line))) => line,
            Some(Ok(other)) => {
                return Err(HandshakeError::Protocol(format!(
                    "unreadable answer to hello: {other:?}"
                )))
            }
        };
        tracing::debug!(line = %peer_message(&line), "from referee");
        if line.starts_with("HTTP/") {
            let status: String = line.trim_end().chars().take(80).collect();
            return Err(HandshakeError::WebServer(status));
        }
        match parse_referee_line(&line) {
            Ok(RefereeMessage::Welcome {
                protocol,
                server,
                ticket,
                ..
            }) => {
                if protocol != PROTOCOL_VERSION {
                    return Err(HandshakeError::Protocol(format!(
                        "the referee speaks protocol {protocol}, this client {PROTOCOL_VERSION}"
                    )));
                }
                return Ok(Welcomed { server, ticket });
            }
            Ok(RefereeMessage::Error {
                code: ErrorCode::LeagueOver,
                message,
                ..
            }) => return Err(HandshakeError::LeagueOver(message)),
            Ok(RefereeMessage::Error {
                code: ErrorCode::LoginThrottled,
                message,
                ..
            }) => return Err(HandshakeError::Throttled(message)),
            Ok(RefereeMessage::Error { code, message, .. }) => {
                return Err(HandshakeError::Refused(format!(
                    "{}: {message}",
                    code.as_str()
                )))
            }
            Ok(RefereeMessage::Ping { id }) => {
                link.send(BotMessage::Pong { id }.to_line()).await?;
            }
            Ok(other) => {
                return Err(HandshakeError::Protocol(format!(
                    "expected welcome, got {}",
                    peer_message(&other.to_line())
                )))
            }
            Err(e) => {
                return Err(HandshakeError::Protocol(format!(
                    "bad answer to hello: {}",
                    peer_message(&e.to_string())
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;

    fn hello() -> BotMessage {
        BotMessage::hello("a", "t", vec!["hex".into()], 1, None, None)
    }

    /// A one-shot referee: reads the hello, writes `answers`, then reads one more line (the
    /// pong, if a ping was sent) and returns what it read.
    async fn referee(
        answers: &'static [&'static str],
    ) -> (String, tokio::task::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let task = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let (read, mut write) = socket.into_split();
            let mut lines = BufReader::new(read).lines();
            let mut seen = vec![lines.next_line().await.unwrap().unwrap_or_default()];
            for answer in answers {
                write.write_all(answer.as_bytes()).await.unwrap();
                write.write_all(b"\n").await.unwrap();
                if answer.contains("\"ping\"") {
                    seen.push(lines.next_line().await.unwrap().unwrap_or_default());
                }
            }
            // Hold the connection until the client is done with it.
            let _ = lines.next_line().await;
            seen
        });
        (addr, task)
    }

    #[tokio::test]
    async fn an_http_answer_says_the_address_is_a_web_server() {
        let (addr, _task) = referee(&["HTTP/1.1 400 Bad Request\r"]).await;
        let err = connect_and_hello(&addr, &hello(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, HandshakeError::WebServer(status) if status == "HTTP/1.1 400 Bad Request"),
            "{err}"
        );
        assert!(err.to_string().contains("web view's port"), "{err}");
    }

    #[tokio::test]
    async fn a_welcome_after_a_ping_completes_the_handshake() {
        let (addr, task) = referee(&[
            r#"{"type":"ping","id":4}"#,
            r#"{"type":"welcome","protocol":1,"name":"a","server":"arena test","ticket":"t1"}"#,
        ])
        .await;
        let (link, welcomed) = connect_and_hello(&addr, &hello(), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(welcomed.server, "arena test");
        assert_eq!(welcomed.ticket.as_deref(), Some("t1"));
        drop(link);
        let seen = task.await.unwrap();
        assert!(seen[0].contains("\"hello\""), "{seen:?}");
        assert_eq!(seen[1], r#"{"type":"pong","id":4}"#);
    }

    #[tokio::test]
    async fn refusals_versions_and_surprises_are_errors() {
        let (addr, _task) =
            referee(&[r#"{"type":"error","code":"auth_failed","message":"wrong token"}"#]).await;
        let e = connect_and_hello(&addr, &hello(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, HandshakeError::Refused(m) if m == "auth_failed: wrong token"),
            "{e}"
        );
        let (addr, _task) =
            referee(&[r#"{"type":"welcome","protocol":2,"name":"a","server":"x"}"#]).await;
        let e = connect_and_hello(&addr, &hello(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("protocol 2"), "{e}");
        let (addr, _task) = referee(&[r#"{"type":"ping"}"#]).await;
        let e = connect_and_hello(&addr, &hello(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, HandshakeError::Protocol(_)), "{e}");
    }

    #[tokio::test]
    async fn nobody_listening_is_a_connect_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let e = connect_and_hello(&addr, &hello(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, HandshakeError::Connect { .. }), "{e}");
    }
}
