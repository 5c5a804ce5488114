//! Test helpers for the web view: a server with the web view on port 0, requests through
//! hyper's HTTP/1.1 client (status, headers, body), and a reader of Server-Sent Events.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use futures_util::StreamExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use arena::config::Config;
use arena::server::{ServerError, ServerSummary};

/// A server with its web view, running in this test's runtime.
pub struct WebServer {
    pub addr: SocketAddr,
    pub web: SocketAddr,
    pub shutdown: CancellationToken,
    pub handle: JoinHandle<Result<ServerSummary, ServerError>>,
    pub out_dir: PathBuf,
    pub config: Config,
    pub dir: tempfile::TempDir,
}

impl WebServer {
    pub async fn start(config_text: &str) -> WebServer {
        WebServer::start_after(config_text, |_| {}).await
    }

    /// A server started on an `out_dir` that `prepare` filled first (the outputs of an earlier
    /// run, say).
    pub async fn start_after(
        config_text: &str,
        prepare: impl FnOnce(&std::path::Path),
    ) -> WebServer {
        let mut config = Config::from_toml(config_text).expect("test config is valid");
        let dir = tempfile::tempdir().expect("temp dir");
        config.server.out_dir = dir.path().join("out");
        std::fs::create_dir_all(&config.server.out_dir).expect("out dir");
        prepare(&config.server.out_dir);
        let listener = arena::server::bind(&config, Some("127.0.0.1:0"))
            .await
            .expect("bind");
        let web_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind web");
        let addr = listener.local_addr().expect("addr");
        let web = web_listener.local_addr().expect("web addr");
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(arena::server::run_with(
            config.clone(),
            listener,
            shutdown.clone(),
            Vec::new(),
            Some(arena::web::companion(web_listener)),
        ));
        WebServer {
            addr,
            web,
            shutdown,
            handle,
            out_dir: dir.path().join("out"),
            config,
            dir,
        }
    }

    pub async fn get(&self, path: &str) -> Response {
        request(self.web, "GET", path).await
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let response = self.get(path).await;
        assert_eq!(response.status, 200, "GET {path}: {}", response.text());
        response.json()
    }

    /// Waits until `check` holds for the JSON of `path` (polling), and returns that JSON.
    pub async fn wait_for(&self, path: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let value = self.get_json(path).await;
            if check(&value) {
                return value;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "GET {path} never met the condition; last answer {value}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn finished(self) -> (ServerSummary, PathBuf, tempfile::TempDir) {
        let summary = tokio::time::timeout(Duration::from_secs(300), self.handle)
            .await
            .expect("server exits")
            .expect("server task")
            .expect("server ok");
        (summary, self.out_dir, self.dir)
    }
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Sends one request to the web view at `addr` and returns its answer's head and the open
/// body (one connection per request, as a browser tab's first request would be).
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, Body) {
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Body::empty())
        .unwrap_or_else(|e| panic!("{method} {path}: not a request: {e}"));
    let client = Client::builder(TokioExecutor::new()).build_http();
    let answer = client
        .request(request)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = answer.status().as_u16();
    let headers = answer
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    (status, headers, Body::new(answer.into_body()))
}

/// Sends one request and reads the whole answer.
pub async fn request(addr: SocketAddr, method: &str, path: &str) -> Response {
    request_with(addr, method, path, &[]).await
}

/// Sends one request with `headers` besides `accept: */*` and reads the whole answer.
pub async fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Response {
    let fut = async {
        let headers = [&[("accept", "*/*")], headers].concat();
        let (status, headers, body) = send(addr, method, path, &headers).await;
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: body: {e}"))
            .to_vec();
        Response {
            status,
            headers,
            body,
        }
    };
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no answer"))
}

/// An open `/api/events` stream.
pub struct Events {
    body: BodyDataStream,
    pending: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Events {
    pub async fn open(addr: SocketAddr) -> Events {
        Events::open_path(addr, "/api/events").await
    }

    /// An event stream at `path` (e.g. `/api/events?match=ID`).
    pub async fn open_path(addr: SocketAddr, path: &str) -> Events {
        let (status, headers, body) =
            send(addr, "GET", path, &[("accept", "text/event-stream")]).await;
        Events {
            body: body.into_data_stream(),
            pending: String::new(),
            status,
            headers,
        }
    }

    /// The next event that is not of kind `skip`.
    pub async fn next_skipping(&mut self, skip: &str) -> Option<(String, Value)> {
        loop {
            let (kind, data) = self.next().await?;
            if kind != skip {
                return Some((kind, data));
            }
        }
    }

    /// The next event (name, data), skipping keep-alive comments; `None` when the stream ends.
    pub async fn next(&mut self) -> Option<(String, Value)> {
        // Keep-alive comments do not count: an event must come within this time.
        let give_up = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Some((
                    name,
                    serde_json::from_str(&data).expect("event data is JSON"),
                ));
            }
            let chunk = tokio::time::timeout_at(give_up, self.body.next())
                .await
                .expect("an event in time")?
                .ok()?;
            self.pending.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// `text` percent-encoded for a query parameter (every byte but unreserved ones).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
