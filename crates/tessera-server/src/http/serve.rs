//! The serving loop of a listener (D16.21, D16.22): HTTP/1.1 through hyper with the
//! connection limits `axum::serve` does not have.
//!
//! - **Header-read timeout** (`http.header_read_timeout_ms`, 30 s): a request head must arrive
//!   whole in time, else hyper closes the connection. Hyper also runs this timer while a
//!   keep-alive connection waits for its next request.
//! - **Idle timeout** (`http.idle_timeout_ms`, 60 s): a connection that moves no byte either way
//!   for this long is closed, in the middle of a request too (a body that stops arriving, an
//!   answer the client stops reading).
//! - **Connection cap** (`http.max_connections`, 10 000): each connection holds a permit; at the
//!   cap the loop stops accepting until one closes (new clients wait in the kernel's queue), so
//!   file descriptors cannot run out. The open-file soft limit is raised to fit at start.
//! - **Graceful stop**: when `shutdown` resolves the listener is closed, every connection is told
//!   to finish what it is reading or handling and close, and the loop returns once all have.
//!
//! - **Refusals hyper writes itself** (a head it cannot read: 400, 414, 431) are replaced on the
//!   way out by the JSON error envelope with a request id (D17.44, see `refusal`), and the socket
//!   then closes lingering (see `linger`), so the client reads the answer instead of a reset.
//!
//! Slow-client protection is proved by `tests/api/hardening.rs`
//! (`slow_clients_cannot_starve_a_well_behaved_one`).
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt as _;

use crate::config::HttpConfig;

/// The connection limits of one listener.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

impl Limits {
    pub fn from_config(c: &HttpConfig) -> Self {
        Limits {
            header_read_timeout: Duration::from_millis(c.header_read_timeout_ms),
            idle_timeout: Duration::from_millis(c.idle_timeout_ms),
            max_connections: c.max_connections.clamp(1, u32::MAX as usize),
        }
    }
}

/// Raises the open-file soft limit so that `max_connections` sockets fit beside the database
/// files, logs, and the listener (a margin of 1 024). Warns when the hard limit is lower.
pub fn raise_open_file_limit(max_connections: usize) {
    let wanted = max_connections as u64 + 1024;
    match rlimit::increase_nofile_limit(wanted) {
        Ok(got) if got < wanted => tracing::warn!(
            wanted,
            got,
            "the open-file hard limit is below http.max_connections + 1024; raise it (ulimit -Hn) or lower the cap"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits for every open connection
/// to finish its request and close.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            biased;
            _ = &mut shutdown => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            biased;
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // EMFILE and the like: the connection stays queued; try again shortly
                    // instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tokio::spawn(connection(stream, peer, app.clone(), limits, stop_rx.clone(), permit));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Each connection holds a permit until it ends: having them all back means all ended.
    let _all = permits.acquire_many(limits.max_connections as u32).await;
    Ok(())
}

/// When a connection last moved a byte, in ms since it opened.
struct Activity {
    opened: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn touch(&self) {
        self.last_ms.store(self.opened.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
    fn last(&self) -> Instant {
        self.opened + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// A socket that records when it last read or wrote a byte, and that puts hyper's own refusals
/// of unreadable requests into the error envelope (see [`refusal`]).
struct Tracked {
    /// The socket; taken only when the connection ends (see [`linger`]).
    inner: Option<TcpStream>,
    activity: Arc<Activity>,
    /// The envelope answer replacing hyper's bare one, and how much of it is written. Once set,
    /// hyper's writes are taken and dropped: it closes the connection after its refusal.
    replaced: Option<(Vec<u8>, usize)>,
    /// The connection's place under the cap, held until the socket is closed.
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for Tracked {
    /// A refused request may have bytes the server never read: closing the socket with them
    /// unread would reset the connection, and a reset makes the client's kernel drop the answer
    /// it has not read yet. So after a refusal the socket lingers (see [`linger`]).
    fn drop(&mut self) {
        if self.replaced.is_none() {
            return;
        }
        if let (Some(stream), Ok(rt)) = (self.inner.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(linger(stream, self.permit.take()));
        }
    }
}

/// How long, and for how many bytes, a refused connection is drained before it is closed.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_MAX_BYTES: usize = 4 << 20;

/// A lingering close, as web servers make one (nginx's `lingering_close`): the write side is
/// closed so that the client reads the answer and its end, then what the client still sends is
/// read and dropped, for [`LINGER_TIME`] and [`LINGER_MAX_BYTES`] at most, before the socket
/// closes. The connection keeps its permit meanwhile, so lingering sockets count against the cap.
async fn linger(mut stream: TcpStream, permit: Option<OwnedSemaphorePermit>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let _permit = permit;
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut left = LINGER_MAX_BYTES;
    let _ = tokio::time::timeout(LINGER_TIME, async {
        while left > 0 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

impl Tracked {
    /// The socket, while the connection lasts (it is taken only on drop).
    fn io(&mut self) -> std::io::Result<Pin<&mut TcpStream>> {
        self.inner.as_mut().map(Pin::new).ok_or_else(|| std::io::ErrorKind::NotConnected.into())
    }

    /// Writes the rest of the replacement answer.
    fn poll_replaced(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Some((bytes, done)) = self.replaced.as_mut() else { return Poll::Ready(Ok(())) };
        while *done < bytes.len() {
            let Some(inner) = self.inner.as_mut() else {
                return Poll::Ready(Err(std::io::ErrorKind::NotConnected.into()));
            };
            let n = ready!(Pin::new(inner).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            *done += n;
            self.activity.touch();
        }
        Poll::Ready(Ok(()))
    }

    /// Hyper's write of `first` then `len` bytes in all: taken over (`Some(len)`, reported as
    /// written) when a replacement is under way or `first` is hyper's bare refusal.
    fn take_over(&mut self, cx: &mut Context<'_>, first: &[u8], len: usize) -> Option<Poll<std::io::Result<usize>>> {
        if self.replaced.is_none() {
            self.replaced = Some((refusal(first)?, 0));
        }
        Some(self.poll_replaced(cx).map_ok(|()| len))
    }
}

/// Hyper answers a request it cannot read before the application sees it: a request target over
/// 64 KiB (414), a head over its buffer or with too many fields (431), a broken request line or
/// header, a malformed `Content-Length` or `Transfer-Encoding` (400). Its answer is a bare head
/// (`content-length: 0`, no `x-request-id`, which every application answer carries). This
/// returns the envelope answer that replaces such a head (D17.44, D1.1): same status, the JSON
/// error envelope, a fresh request id in the body and the `x-request-id` header.
fn refusal(head: &[u8]) -> Option<Vec<u8>> {
    use crate::http::error::ApiError;
    use crate::http::middleware::request_id as rid;
    // Every write of every answer passes here: look at the status bytes before anything else,
    // so a 200 (or a body chunk) costs a 13-byte comparison, not a UTF-8 check of the buffer.
    let status = head.strip_prefix(b"HTTP/1.1 ").or_else(|| head.strip_prefix(b"HTTP/1.0 "))?.get(..4)?;
    let error = match status {
        b"400 " => ApiError::malformed_request(),
        b"414 " => ApiError::uri_too_long(rid::MAX_TARGET_BYTES),
        b"431 " => ApiError::headers_too_large(rid::MAX_HEADERS, rid::MAX_HEADER_BYTES),
        _ => return None,
    };
    let head = std::str::from_utf8(head).ok()?.strip_suffix("\r\n\r\n")?;
    let lower = head.to_ascii_lowercase();
    if lower.contains("\r\nx-request-id:") || lower.contains("\r\ncontent-type:") || head.contains("\r\n\r\n") {
        return None;
    }
    let id = rid::new_id();
    let body = error.envelope_bytes(&id).ok()?;
    let mut out = Vec::with_capacity(head.len() + body.len() + 160);
    // Hyper's status line and `date`; the framing fields are ours.
    let ours = |l: &str| {
        let l = l.to_ascii_lowercase();
        l.starts_with("content-length:") || l.starts_with("connection:")
    };
    for line in head.split("\r\n").filter(|l| !ours(l)) {
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let fields = format!(
        "content-type: application/json\r\ncontent-length: {}\r\n{}: {id}\r\nconnection: close\r\n\r\n",
        body.len(),
        rid::HEADER
    );
    out.extend_from_slice(fields.as_bytes());
    out.extend_from_slice(&body);
    tracing::info!(status = error.status.as_u16(), code = error.code, request_id = %id, "refused an unreadable request");
    Some(out)
}

impl AsyncRead for Tracked {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = this.io()?.poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Some(r) = this.take_over(cx, data, data.len()) {
            return r;
        }
        let r = this.io()?.poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        r
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
        if let Some(r) = this.take_over(cx, first, bufs.iter().map(|b| b.len()).sum()) {
            return r;
        }
        let r = this.io()?.poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.as_ref().is_some_and(TcpStream::is_write_vectored)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replaced(cx))?;
        this.io()?.poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replaced(cx))?;
        this.io()?.poll_shutdown(cx)
    }
}

/// Requests of one connection being handled (the service future not yet done).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(n: &Arc<AtomicUsize>) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        InFlight(n.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let activity = Arc::new(Activity { opened: Instant::now(), last_ms: AtomicU64::new(0) });
    let io =
        TokioIo::new(Tracked { inner: Some(stream), activity: activity.clone(), replaced: None, permit: Some(permit) });
    let in_flight = Arc::new(AtomicUsize::new(0));
    let counter = in_flight.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let mut req = req.map(axum::body::Body::new);
        req.extensions_mut().insert(ConnectInfo(peer));
        let guard = InFlight::enter(&counter);
        let app = app.clone();
        async move {
            let _guard = guard;
            app.oneshot(req).await
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true)
        // A client may close its sending side once its request is out and wait for the answer
        // (`shutdown(SHUT_WR)`): without this hyper takes that end for the client going away
        // and drops the answer being made.
        .half_close(true)
        // Past hyper's own limits it answers 414 or 431 itself (and 400 to a head it cannot
        // read), which `Tracked` puts into the envelope; the request-id middleware refuses
        // smaller excesses (a target over 8 KiB, more than 100 headers, 32 KiB of them) first.
        .max_headers(crate::http::middleware::request_id::MAX_HEADERS * 4);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        let idle_at = activity.last() + limits.idle_timeout;
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, %peer, "connection ended with an error");
                }
                return;
            }
            changed = stop.changed(), if !stopping => {
                stopping = true;
                if changed.is_ok() || *stop.borrow() {
                    conn.as_mut().graceful_shutdown();
                }
            }
            _ = tokio::time::sleep_until(idle_at) => {
                if activity.last() + limits.idle_timeout <= Instant::now() {
                    tracing::debug!(%peer, in_flight = in_flight.load(Ordering::Relaxed), "closing an idle connection");
                    return;
                }
            }
        }
    }
}

/// Serves the application on `listener` (and `/metrics` on `metrics.listen` when configured)
/// with the configured limits until `shutdown` resolves; see the module docs.
pub async fn run(
    listener: TcpListener,
    app: Router,
    config: &crate::config::Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let limits = Limits::from_config(&config.http);
    raise_open_file_limit(limits.max_connections);
    let stop = tokio_util::sync::CancellationToken::new();
    let metrics = match config.metrics.own_address()?.filter(|_| config.metrics.enabled) {
        None => None,
        Some(addr) => {
            let l = TcpListener::bind(addr).await.with_context(|| format!("binding metrics.listen {addr}"))?;
            tracing::info!(addr = %addr, "metrics listening");
            let router = Router::new().route("/metrics", axum::routing::get(super::health::metrics));
            Some(tokio::spawn(serve(l, router, limits, stop.clone().cancelled_owned())))
        }
    };
    let main = serve(listener, app, limits, stop.clone().cancelled_owned());
    let trigger = stop.clone();
    let watcher = tokio::spawn(async move {
        // Cancels when this task ends however it ends: a shutdown future that panics (its log
        // line written to a closed stdout and stderr makes tracing panic) must still stop the
        // server rather than leave it deaf to the signal.
        let _stop_on_exit = trigger.drop_guard();
        shutdown.await;
    });
    let result = main.await;
    stop.cancel();
    watcher.abort();
    if let Some(m) = metrics {
        let _ = m.await;
    }
    result.context("serving")
}
