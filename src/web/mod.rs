//! The web view: an HTTP server on the referee's runtime serving the pages (`/`,
//! `/games/{match}`, `/play`), the JSON API, Server-Sent Events and the WebSocket bot seat.
//! It runs beside the server as its companion (`companion`): it follows the server's events
//! into its read model (`live`) and reads the registry; its failures are logged and never
//! reach a referee. The pages and their assets are compiled into the binary.

pub mod api;
pub mod feed;
mod http;
pub mod live;
pub mod site;
mod ws;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::game::GameId;
use crate::server::address::AddressShares;
use crate::server::connection::ConnectionContext;
use crate::server::registry::Registry;
use crate::server::Companion;
use live::{HeldGame, Live};

/// The pages and assets, as shipped in the binary.
pub mod assets {
    pub const INDEX_HTML: &str = include_str!("assets/index.html");
    pub const GAME_HTML: &str = include_str!("assets/game.html");
    pub const PLAY_HTML: &str = include_str!("assets/play.html");
    pub const STYLE_CSS: &str = include_str!("assets/style.css");
    pub const BOARD_JS: &str = include_str!("assets/board.js");
    pub const APP_JS: &str = include_str!("assets/app.js");
    /// The pages' icon (also served as `/favicon.ico`, which browsers ask for by themselves).
    pub const ICON_SVG: &str = include_str!("assets/icon.svg");
    pub const ICON_TYPE: &str = "image/svg+xml";
    /// Every asset: its file name under `/assets/`, its content type and its text.
    pub const ALL: [(&str, &str, &str); 4] = [
        ("style.css", "text/css; charset=utf-8", STYLE_CSS),
        ("board.js", "text/javascript; charset=utf-8", BOARD_JS),
        ("app.js", "text/javascript; charset=utf-8", APP_JS),
        ("icon.svg", ICON_TYPE, ICON_SVG),
    ];
}

/// What the web view's handlers share.
#[derive(Clone)]
pub struct WebContext {
    config: Arc<Config>,
    registry: Arc<Registry>,
    connections: Arc<ConnectionContext>,
    event_slots: Arc<Semaphore>,
    socket_slots: Arc<Semaphore>,
    /// Each address's share of the event streams and of the WebSockets.
    event_shares: Arc<AddressShares>,
    socket_shares: Arc<AddressShares>,
    stop: CancellationToken,
    /// The read model of the running server.
    live: Live,
    /// The league's event batches, made once for every `/api/events` stream.
    feed: feed::EventFeed,
    /// Slots for the requests whose work may take more than a millisecond.
    work: BlockingWork,
    /// Where each finished game's line is in games.jsonl.
    finished_index: Arc<api::FinishedIndex>,
    finished_answers: Arc<FinishedAnswers>,
}

impl WebContext {
    /// The web view of the server whose connections share `connections`, reading `live`.
    pub fn new(connections: Arc<ConnectionContext>, live: Live) -> WebContext {
        let config = connections.config.clone();
        WebContext {
            live,
            registry: connections.registry.clone(),
            event_slots: Arc::new(Semaphore::new(config.server.web_max_event_streams)),
            socket_slots: Arc::new(Semaphore::new(config.server.web_max_sockets)),
            event_shares: AddressShares::new(config.server.web_max_event_streams_per_address),
            socket_shares: AddressShares::new(config.server.web_max_sockets_per_address),
            stop: connections.shutdown.clone(),
            feed: feed::EventFeed::default(),
            work: BlockingWork::new(WORK_SLOTS),
            finished_index: Arc::new(api::FinishedIndex::new(&config.server.out_dir)),
            finished_answers: Arc::default(),
            config,
            connections,
        }
    }

    fn live_view(&self) -> &Live {
        &self.live
    }
}

/// A JSON error answer: `{"error": message}` with `status`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

/// Requests whose work runs on the blocking pool at once; the rest wait for a slot.
const WORK_SLOTS: usize = 2;
/// How long a request waits for a work slot before it is answered 503.
const WORK_QUEUE_WAIT: Duration = Duration::from_secs(2);
/// How long a request's work may take before it is answered 503 (the work itself is bounded
/// in size and ends on its own; its slot stays taken until then).
const WORK_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs the web view's heavier work (move lists, game replays) off the runtime's threads, a
/// few at a time, under a time limit: the referees never wait behind a web request.
#[derive(Clone)]
struct BlockingWork {
    slots: Arc<Semaphore>,
}

impl BlockingWork {
    fn new(slots: usize) -> BlockingWork {
        BlockingWork {
            slots: Arc::new(Semaphore::new(slots)),
        }
    }

    /// `work`'s result, or 503 when no slot frees within `WORK_QUEUE_WAIT` or the work takes
    /// longer than `WORK_TIMEOUT`.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let busy = || {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is busy; try again",
            )
        };
        let slot = tokio::time::timeout(WORK_QUEUE_WAIT, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| busy())?
            .map_err(|_| busy())?;
        let task = tokio::task::spawn_blocking(move || {
            let answer = work();
            drop(slot);
            answer
        });
        match tokio::time::timeout(WORK_TIMEOUT, task).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                e.to_string(),
            )),
            Err(_) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the answer took too long to compute",
            )),
        }
    }
}

/// The web view served on `listener` beside a server: it follows the server's events from its
/// start, and serves once the server listens.
pub fn companion(listener: TcpListener) -> Companion {
    let live = Live::default();
    Companion {
        address: listener.local_addr().ok(),
        subscriber: live.subscriber(),
        start: Box::new(move |connections, stop| {
            start(listener, WebContext::new(connections, live), stop)
        }),
    }
}

/// Loads the games finished before this run into the live view, then serves the web view on
/// `listener` until `stop`. Returns the serving task (it ends soon after `stop`).
pub fn start(
    listener: TcpListener,
    context: WebContext,
    stop: CancellationToken,
) -> JoinHandle<()> {
    let out_dir = context.config.server.out_dir.clone();
    for game in api::finished_games(&out_dir) {
        context.live_view().add_finished(game);
    }
    if let Ok(address) = listener.local_addr() {
        tracing::info!("web view: http://{address}/");
    }
    let feed = context
        .feed
        .clone()
        .run(context.live_view().clone(), stop.clone());
    let limits = http::HttpLimits::of(&context.config.server);
    let refusals = context.connections.refusals.clone();
    let app = router(context);
    tokio::spawn(async move {
        let feed = tokio::spawn(feed);
        http::serve(listener, app, limits, refusals, stop).await;
        feed.abort();
    })
}

/// The Content-Security-Policy of every answer: the pages load only their own scripts, styles
/// and data, and no other site may frame them.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// Adds the security headers to every answer.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// Most bytes of a plain error answer's text that `json_errors` reads (axum's rejections are a
/// sentence).
const ERROR_TEXT_BYTES: usize = 4096;

/// Makes every error answer JSON, `{"error": "…"}`, as the API promises: the handlers' own
/// errors are `ApiError`s already, but axum's extractors reject a request with plain text of
/// their own (a path segment or a query that does not decode, `/ws` without its WebSocket
/// headers). Those are rewritten here, their text kept as the message, so that no route can
/// answer otherwise. HTML answers are left alone: the game page's `404` is a page for people.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    if !status.is_client_error() && !status.is_server_error() {
        return response;
    }
    let kind = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if kind.starts_with("application/json") || kind.starts_with("text/html") {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, ERROR_TEXT_BYTES).await {
        Ok(bytes) if !bytes.trim_ascii().is_empty() => {
            String::from_utf8_lossy(bytes.trim_ascii()).into_owned()
        }
        _ => status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase(),
    };
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    let body = json!({ "error": text }).to_string();
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// The client's address as the limits count it: the TCP peer's, or, when the peer is one of
/// `server.trusted_proxies`, the last address of `X-Forwarded-For` that is not a trusted proxy
/// (proxies append the address they heard from, so that one cannot be forged by the client).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

impl axum::extract::FromRequestParts<WebContext> for ClientAddr {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        context: &WebContext,
    ) -> Result<ClientAddr, ApiError> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the connection's address is unknown",
                )
            })?;
        let trusted = &context.config.server.trusted_proxies;
        Ok(ClientAddr(client_address(peer, &parts.headers, trusted)))
    }
}

/// See [`ClientAddr`].
fn client_address(
    peer: SocketAddr,
    headers: &axum::http::HeaderMap,
    trusted: &[std::net::IpAddr],
) -> SocketAddr {
    if !trusted.contains(&peer.ip()) {
        return peer;
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    for hop in forwarded.iter().rev() {
        match hop.parse::<std::net::IpAddr>() {
            Ok(ip) if trusted.contains(&ip) => continue,
            Ok(ip) => return SocketAddr::new(ip, 0),
            // An unreadable hop: nothing before it can be trusted.
            Err(_) => return peer,
        }
    }
    peer
}

fn router(context: WebContext) -> Router {
    Router::new()
        .route("/", get(|| page(assets::INDEX_HTML)))
        .route("/games/{match}", get(game_page))
        .route("/favicon.ico", get(favicon))
        .route("/play", get(|| page(assets::PLAY_HTML)))
        .route("/assets/{file}", get(asset))
        .route("/api/standings", get(standings))
        .route("/api/games", get(games))
        .route("/api/games/meta", get(|| async { Json(api::games_meta()) }))
        .route("/api/games/{match}", get(game))
        .route("/api/moves", get(moves))
        .route("/api/bots", get(bots))
        .route("/api/events", get(events))
        .route("/records/{file}", get(record))
        .route("/ws", get(ws::upgrade))
        .fallback(|| async { ApiError::not_found("no such page") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "only GET is served here")
        })
        .layer(axum::middleware::map_response(json_errors))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(context)
}

async fn page(html: &'static str) -> Html<&'static str> {
    Html(html)
}

/// A game's page, or 404 with a page that says no such game is known.
async fn game_page(State(context): State<WebContext>, Path(match_id): Path<String>) -> Response {
    if context.live_view().game(&match_id).is_some() {
        return Html(assets::GAME_HTML).into_response();
    }
    let shown: String = match_id.chars().take(120).collect();
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>arena: no such game</title>\n<link rel=\"stylesheet\" href=\"/assets/style.css\">\n\
         <link rel=\"icon\" href=\"/assets/icon.svg\" type=\"image/svg+xml\">\n</head>\n\
         <body data-page=\"missing\">\n<header><h1>arena</h1><a href=\"/\">league</a></header>\n\
         <main><section><h2 id=\"missing\">No game {} is known here</h2>\n<p>It has not started \
         yet, or its name is misspelt. The <a href=\"/\">league page</a> lists the games.</p>\
         </section></main>\n</body>\n</html>\n",
        escape_html(&shown)
    );
    (StatusCode::NOT_FOUND, Html(page)).into_response()
}

/// Text made safe inside HTML.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

async fn favicon() -> Response {
    (
        [(header::CONTENT_TYPE, assets::ICON_TYPE)],
        assets::ICON_SVG,
    )
        .into_response()
}

async fn asset(Path(file): Path<String>) -> Result<Response, ApiError> {
    let (_, content_type, text) = assets::ALL
        .iter()
        .find(|(name, _, _)| *name == file)
        .ok_or_else(|| ApiError::not_found(format!("no asset {file:?}")))?;
    Ok(([(header::CONTENT_TYPE, *content_type)], *text).into_response())
}

async fn standings(State(context): State<WebContext>) -> Response {
    let text = match context.live_view().standings() {
        Some(text) => text.as_str().to_string(),
        None => api::standings_text(&context.config),
    };
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

async fn games(State(context): State<WebContext>) -> Json<Value> {
    Json(json!({ "games": context.live_view().games() }))
}

/// Finished games' `/api/games/{match}` answers kept ready (the most asked-for are the latest).
const CACHED_ANSWERS: usize = 256;

/// Rendered answers of finished games (they never change).
#[derive(Default)]
struct FinishedAnswers(std::sync::Mutex<HashMap<String, Bytes>>);

impl FinishedAnswers {
    fn get(&self, match_id: &str) -> Option<Bytes> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(match_id)
            .cloned()
    }

    fn keep(&self, match_id: String, body: Bytes) {
        let mut answers = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() >= CACHED_ANSWERS {
            answers.clear();
        }
        answers.insert(match_id, body);
    }
}

async fn game(
    State(context): State<WebContext>,
    Path(match_id): Path<String>,
    request_headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let held = context
        .live_view()
        .game(&match_id)
        .ok_or_else(|| ApiError::not_found("no game of that id has started"))?;
    let finished = match &held {
        HeldGame::InMemory(game) => game.result.is_some(),
        HeldGame::Finished => true,
    };
    let cached = finished
        .then(|| context.finished_answers.get(&match_id))
        .flatten();
    let body = match cached {
        Some(body) => body,
        None => {
            // Replaying a long game (or reading an older one back from games.jsonl) takes a
            // moment: off the runtime's threads.
            let index = context.finished_index.clone();
            let output = context.connections.output.clone();
            let id = match_id.clone();
            let detail = context
                .work
                .run(move || match held {
                    HeldGame::InMemory(game) => Some(api::game_detail(&game)),
                    // A finished game whose line waits to be written (a failing disk) is
                    // served from the output writer's queue.
                    HeldGame::Finished => output
                        .waiting_line(&id)
                        .map(|line| api::game_of_line(&line))
                        .or_else(|| index.game(&id))
                        .map(|g| api::game_detail(&g)),
                })
                .await?
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the game is finished but its games.jsonl line cannot be read",
                    )
                })?;
            let body = Bytes::from(detail.to_string());
            if finished {
                context.finished_answers.keep(match_id, body.clone());
            }
            body
        }
    };
    Ok(cacheable_json(body, finished, &request_headers))
}

/// A JSON answer with an `ETag` (its content's hash), `304 Not Modified` when the client holds
/// it already; cached for good by browsers and proxies when `immutable`.
fn cacheable_json(body: Bytes, immutable: bool, request: &axum::http::HeaderMap) -> Response {
    let etag = format!("\"{:016x}\"", crate::hash::fnv1a64(&body));
    let cache_control = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let etag_value = HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"\""));
    let known = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    let headers = [
        (header::ETAG, etag_value),
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        ),
    ];
    if known {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (
        headers,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Longest `position` (and `rules`) parameter `/api/moves` reads: a Jiu position text is
/// under 300 bytes.
const MAX_POSITION_BYTES: usize = 4096;

async fn moves(
    State(context): State<WebContext>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let game = query
        .get("game")
        .ok_or_else(|| ApiError::bad_request("missing query parameter `game`"))?;
    let game: GameId = game
        .parse()
        .map_err(|_| ApiError::bad_request("unknown game"))?;
    let position = query
        .get("position")
        .ok_or_else(|| ApiError::bad_request("missing query parameter `position`"))?;
    let too_long = |what: &str| {
        ApiError::bad_request(format!(
            "`{what}` is longer than {MAX_POSITION_BYTES} bytes"
        ))
    };
    if position.len() > MAX_POSITION_BYTES {
        return Err(too_long("position"));
    }
    let rules = match query.get("rules") {
        None => json!({}),
        Some(text) if text.len() > MAX_POSITION_BYTES => return Err(too_long("rules")),
        Some(text) => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| ApiError::bad_request("`rules` must be a JSON object"))?,
    };
    let position = position.clone();
    let moves = context
        .work
        .run(move || api::legal_moves(game, &position, &rules))
        .await??;
    Ok(Json(json!({ "moves": moves })))
}

async fn bots(State(context): State<WebContext>) -> Json<Value> {
    let faults = context.connections.output.health().faults();
    Json(api::bots(
        &context.config,
        &context.registry,
        &context.live,
        &faults,
    ))
}

/// Ends an event stream when the server stops, and gives its slot back when dropped.
/// How long an event stream may stay silent before it sends a comment line (so that proxies
/// and browsers keep it open).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, serde::Deserialize)]
struct EventsQuery {
    /// Follow one game: every event of it, as it happens.
    #[serde(rename = "match")]
    match_id: Option<String>,
}

/// What one event stream reads: the league's batches, or one game's own events.
enum EventSource {
    League(mpsc::Receiver<Bytes>),
    Game {
        events: mpsc::Receiver<Arc<live::LiveEvent>>,
        /// Keeps every move of this game published while the stream lasts.
        _following: live::Following,
    },
}

impl EventSource {
    /// The next chunk of Server-Sent Events text; `None` when the stream should end (the
    /// server stops, or this reader fell a whole queue behind and was dropped).
    async fn next_chunk(&mut self) -> Option<Bytes> {
        match self {
            EventSource::League(batches) => batches.recv().await,
            EventSource::Game { events, .. } => {
                let event = events.recv().await?;
                Some(Bytes::from(feed::sse_text(event.kind, &event.data)))
            }
        }
    }
}

/// `/api/events`: the league's events, sent in batches once a second with one move of each
/// game that moved (`?match=ID`: every event of that game as it happens).
async fn events(
    State(context): State<WebContext>,
    ClientAddr(client): ClientAddr,
    Query(query): Query<EventsQuery>,
) -> Result<Response, ApiError> {
    let share = context.event_shares.try_take(client.ip()).ok_or_else(|| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "this address has too many event streams open (server.web_max_event_streams_per_address)",
        )
    })?;
    let slot = context
        .event_slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many event streams open (server.web_max_event_streams)",
            )
        })?;
    let slot = (slot, share);
    let source = match query.match_id {
        Some(id) => {
            let following = context.live_view().follow(&id);
            EventSource::Game {
                events: context.live_view().subscribe_game(&id),
                _following: following,
            }
        }
        None => EventSource::League(context.feed.subscribe()),
    };
    let stop = context.stop.clone();
    let body = futures_util::stream::unfold(Some((source, slot)), move |state| {
        let stop = stop.clone();
        async move {
            let (mut source, slot) = state?;
            let chunk = tokio::select! {
                _ = stop.cancelled() => return None,
                chunk = tokio::time::timeout(KEEP_ALIVE, source.next_chunk()) => match chunk {
                    Ok(Some(text)) => text,
                    Ok(None) => return None,
                    Err(_) => Bytes::from_static(b": keep-alive\n\n"),
                },
            };
            Some((Ok::<Bytes, Infallible>(chunk), Some((source, slot))))
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(body),
    )
        .into_response())
}

async fn record(
    State(context): State<WebContext>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    let dir = context.config.server.out_dir.join("records");
    let bytes = api::read_record(&dir, &file).await?;
    let charset = match context.config.server.record_encoding {
        crate::config::RecordEncoding::Utf8 => "utf-8",
        crate::config::RecordEncoding::Gb2312 => "gb18030",
    };
    let content_type = HeaderValue::from_str(&format!("text/plain; charset={charset}"))
        .unwrap_or(HeaderValue::from_static("text/plain"));
    let disposition = HeaderValue::from_str(&api::content_disposition(&file))
        .unwrap_or(HeaderValue::from_static("attachment"));
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fifth game must not need edits across the pages: they take every per-game fact from
    /// `/api/games/meta`, so no game id appears in their scripts.
    #[test]
    fn the_pages_scripts_name_no_game() {
        for game in crate::game::GameId::ALL {
            let quoted = format!("\"{game}\"");
            assert!(!assets::BOARD_JS.contains(&quoted), "board.js names {game}");
            assert!(!assets::APP_JS.contains(&quoted), "app.js names {game}");
        }
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxy: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let trusted = vec![proxy.ip()];
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, 203.0.113.9"),
        );
        // The proxy appended the address it heard from: the last one counts, not what the
        // client wrote before it.
        assert_eq!(
            client_address(proxy, &headers, &trusted).ip().to_string(),
            "203.0.113.9"
        );
        // From anyone else the header is ignored.
        let stranger: SocketAddr = "198.51.100.7:4000".parse().unwrap();
        assert_eq!(client_address(stranger, &headers, &trusted), stranger);
        // Garbage: the proxy's own address.
        headers.insert("x-forwarded-for", HeaderValue::from_static("not-an-ip"));
        assert_eq!(client_address(proxy, &headers, &trusted), proxy);
        assert_eq!(
            client_address(proxy, &axum::http::HeaderMap::new(), &trusted),
            proxy
        );
    }
}
