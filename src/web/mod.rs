//! The web view: an HTTP server on the referee's runtime serving the pages (`/`,
//! `/games/{match}`, `/play`), the JSON API, Server-Sent Events and the WebSocket bot seat.
//! It only reads the server's state (through `server::live` and the registry); its failures are
//! logged and never reach a referee. The pages and their assets are compiled into the binary.

pub mod api;
pub mod feed;
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
use crate::server::connection::ConnectionContext;
use crate::server::live::{HeldGame, Live};
use crate::server::registry::Registry;

/// The pages and assets, as shipped in the binary.
pub mod assets {
    pub const INDEX_HTML: &str = include_str!("assets/index.html");
    pub const GAME_HTML: &str = include_str!("assets/game.html");
    pub const PLAY_HTML: &str = include_str!("assets/play.html");
    pub const STYLE_CSS: &str = include_str!("assets/style.css");
    pub const BOARD_JS: &str = include_str!("assets/board.js");
    pub const APP_JS: &str = include_str!("assets/app.js");
    /// Every asset: its file name under `/assets/`, its content type and its text.
    pub const ALL: [(&str, &str, &str); 3] = [
        ("style.css", "text/css; charset=utf-8", STYLE_CSS),
        ("board.js", "text/javascript; charset=utf-8", BOARD_JS),
        ("app.js", "text/javascript; charset=utf-8", APP_JS),
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
    stop: CancellationToken,
    /// The league's event batches, made once for every `/api/events` stream.
    feed: feed::EventFeed,
    /// Slots for the requests whose work may take more than a millisecond.
    work: BlockingWork,
}

impl WebContext {
    /// The web view of the server whose connections share `connections`.
    pub fn live(connections: Arc<ConnectionContext>) -> WebContext {
        let config = connections.config.clone();
        WebContext {
            registry: connections.registry.clone(),
            event_slots: Arc::new(Semaphore::new(config.server.web_max_event_streams)),
            socket_slots: Arc::new(Semaphore::new(config.server.web_max_sockets)),
            stop: connections.shutdown.clone(),
            feed: feed::EventFeed::default(),
            work: BlockingWork::new(WORK_SLOTS),
            config,
            connections,
        }
    }

    fn live_view(&self) -> &Live {
        self.registry.live()
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
    let app = router(context);
    tokio::spawn(async move {
        let feed = tokio::spawn(feed);
        let served = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(stop.cancelled_owned())
        .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the web view stopped");
        }
        feed.abort();
    })
}

fn router(context: WebContext) -> Router {
    Router::new()
        .route("/", get(|| page(assets::INDEX_HTML)))
        .route("/games/{match}", get(|| page(assets::GAME_HTML)))
        .route("/play", get(|| page(assets::PLAY_HTML)))
        .route("/assets/{file}", get(asset))
        .route("/api/standings", get(standings))
        .route("/api/games", get(games))
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
        .with_state(context)
}

async fn page(html: &'static str) -> Html<&'static str> {
    Html(html)
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

async fn game(
    State(context): State<WebContext>,
    Path(match_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let held = context
        .live_view()
        .game(&match_id)
        .ok_or_else(|| ApiError::not_found(format!("no game {match_id:?} has started")))?;
    let out_dir = context.config.server.out_dir.clone();
    // Replaying a long game (or reading an older one back from games.jsonl) takes a moment:
    // off the runtime's threads.
    let detail = context
        .work
        .run(move || match held {
            HeldGame::InMemory(game) => Some(api::game_detail(&game)),
            HeldGame::Finished => {
                api::finished_game(&out_dir, &match_id).map(|g| api::game_detail(&g))
            }
        })
        .await?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the game is finished but its games.jsonl line cannot be read",
            )
        })?;
    Ok(Json(detail))
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
    Json(api::bots(&context.config, &context.registry))
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
        events: mpsc::Receiver<Arc<crate::server::live::LiveEvent>>,
        /// Keeps every move of this game published while the stream lasts.
        _following: crate::server::live::Following,
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
    Query(query): Query<EventsQuery>,
) -> Result<Response, ApiError> {
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

/// The address a WebSocket bot is logged with.
fn peer_of(info: &ConnectInfo<SocketAddr>) -> SocketAddr {
    info.0
}
