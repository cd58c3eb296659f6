//! A minimal HTTP/1.1 responder for Prometheus: `GET /metrics` answers the text exposition, anything
//! else 404 / 405; one request per connection (`Connection: close`), bounded head size and time.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use glommio::net::{TcpListener, TcpStream};

/// Longest request head accepted.
const MAX_HEAD: usize = 8 * 1024;
/// A client that has not sent its request head by then is dropped.
const READ_LIMIT: Duration = Duration::from_secs(5);

/// What to answer to a request line.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
    BadRequest,
}

/// Routes a request head (`GET /metrics?x HTTP/1.1 ...`).
pub fn route(head: &[u8]) -> Route {
    let Ok(text) = std::str::from_utf8(head) else {
        return Route::BadRequest;
    };
    let mut parts = text.lines().next().unwrap_or("").split(' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Route::BadRequest;
    };
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => Route::Metrics,
        ("GET", _) => Route::NotFound,
        _ => Route::MethodNotAllowed,
    }
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Reads until the blank line ending the head; `None` on EOF, overflow or timeout.
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let read = async {
        let mut head = Vec::with_capacity(512);
        let mut buf = [0u8; 1024];
        loop {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            head.extend_from_slice(buf.get(..n)?);
            if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
                return Some(head);
            }
            if head.len() > MAX_HEAD {
                return None;
            }
        }
    };
    read.or(async {
        glommio::timer::sleep(READ_LIMIT).await;
        None
    })
    .await
}

/// Binds `addr` without SO_REUSEPORT (a second broker on the same metrics port must fail to start,
/// not share the scrapes).
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    remoting::bind(addr)
}

/// Serves `listener` until `stop` completes; `page` builds the exposition text for each scrape.
pub async fn serve<F, Fut>(listener: TcpListener, page: F, stop: impl Future<Output = ()>)
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: Future<Output = String> + 'static,
{
    let accept_loop = async {
        loop {
            match listener.accept().await {
                Ok(mut stream) => {
                    let page = page.clone();
                    glommio::spawn_local(async move {
                        let Some(head) = read_head(&mut stream).await else {
                            return;
                        };
                        let reply = match route(&head) {
                            Route::Metrics => response(
                                "200 OK",
                                "text/plain; version=0.0.4; charset=utf-8",
                                &page().await,
                            ),
                            Route::NotFound => {
                                response("404 Not Found", "text/plain", "try /metrics\n")
                            }
                            Route::MethodNotAllowed => {
                                response("405 Method Not Allowed", "text/plain", "GET only\n")
                            }
                            Route::BadRequest => {
                                response("400 Bad Request", "text/plain", "bad request\n")
                            }
                        };
                        let _ = stream.write_all(&reply).await;
                        let _ = stream.flush().await;
                        let _ = stream.close().await;
                    })
                    .detach();
                }
                Err(e) => {
                    tracing::warn!("metrics endpoint: accept failed: {e}");
                    glommio::timer::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    };
    accept_loop.or(stop).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_routed_by_method_and_path() {
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Route::Metrics
        );
        assert_eq!(
            route(b"GET /metrics?name[]=x HTTP/1.0\r\n\r\n"),
            Route::Metrics
        );
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(
            route(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Route::MethodNotAllowed
        );
        assert_eq!(route(b"garbage"), Route::BadRequest);
        assert_eq!(route(&[0xff, 0xfe, b' ', b'/']), Route::BadRequest);
    }
}
