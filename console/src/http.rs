//! A small HTTP/1.1 server for the console (one request per connection, `Connection: close`, bounded
//! head, body and time) and a GET client for the brokers' Prometheus endpoints.

use std::net::SocketAddr;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use glommio::net::{TcpListener, TcpStream};

/// Longest request head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted (admin actions are small JSON objects).
const MAX_BODY: usize = 64 * 1024;
/// A client that has not sent its whole request by then is dropped.
const READ_LIMIT: Duration = Duration::from_secs(10);

/// A parsed request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// The path without the query string.
    pub path: String,
    /// Query parameters, percent-decoded.
    pub query: Vec<(String, String)>,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of cookie `name`.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.header("cookie")?.split(';').find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then_some(v)
        })
    }
}

/// A response to send.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::new(status, "application/json", value.to_string())
    }

    pub fn with_header(mut self, name: &str, value: String) -> Response {
        self.headers.push((name.to_owned(), value));
        self
    }

    fn encode(&self) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            413 => "Payload Too Large",
            415 => "Unsupported Media Type",
            _ => "Error",
        };
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n",
            self.status,
            self.content_type,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// `%xx` and `+` decoding of a query component; bad escapes are kept as they are.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a request head (request line and headers, without the blank line).
pub fn parse_head(head: &str) -> Result<Request, String> {
    let mut lines = head.lines();
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line `{line}`"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported version `{version}`"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Request {
        method: method.to_owned(),
        path: percent_decode(path),
        query,
        headers,
        body: Vec::new(),
    })
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Reads one request; `Err(response)` when it must be refused.
async fn read_request(stream: &mut TcpStream) -> Result<Option<Request>, Response> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = find_head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD {
            return Err(Response::new(400, "text/plain", "request head too long\n"));
        }
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
    };
    let head = String::from_utf8_lossy(buf.get(..head_end).unwrap_or_default()).into_owned();
    let mut request =
        parse_head(&head).map_err(|e| Response::new(400, "text/plain", format!("{e}\n")))?;
    let length: usize = match request.header("content-length") {
        Some(v) => v
            .parse()
            .map_err(|_| Response::new(400, "text/plain", "bad Content-Length\n"))?,
        None => 0,
    };
    if length > MAX_BODY {
        return Err(Response::new(413, "text/plain", "request body too large\n"));
    }
    let mut body = buf.get(head_end + 4..).unwrap_or_default().to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return Ok(None);
        }
        body.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
    body.truncate(length);
    request.body = body;
    Ok(Some(request))
}

/// Binds `addr` without SO_REUSEPORT, so a second console on the same port fails to start.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    remoting::bind(addr)
}

/// Serves `listener` forever; each connection runs as its own task and answers `handle(request)`.
pub async fn serve<F, Fut>(listener: TcpListener, handle: F)
where
    F: Fn(Request) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = Response> + 'static,
{
    loop {
        match listener.accept().await {
            Ok(mut stream) => {
                let handle = handle.clone();
                glommio::spawn_local(async move {
                    let read = read_request(&mut stream).or(async {
                        glommio::timer::sleep(READ_LIMIT).await;
                        Ok(None)
                    });
                    let response = match read.await {
                        Ok(Some(request)) => handle(request).await,
                        Ok(None) => return,
                        Err(refusal) => refusal,
                    };
                    let _ = stream.write_all(&response.encode()).await;
                    let _ = stream.flush().await;
                    let _ = stream.close().await;
                })
                .detach();
            }
            Err(e) => {
                tracing::warn!("console: accept failed: {e}");
                glommio::timer::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// GET `http://addr/path`: the body of a 200 answer, read within `timeout`.
pub async fn get(addr: &str, path: &str, timeout: Duration) -> Result<String, String> {
    let fetch = async {
        let socket = remoting::resolve(addr).map_err(|e| e.to_string())?;
        let mut stream = TcpStream::connect(socket)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream
            .write_all(req.as_bytes())
            .await
            .map_err(|e| format!("write to {addr}: {e}"))?;
        let mut text = Vec::new();
        stream
            .read_to_end(&mut text)
            .await
            .map_err(|e| format!("read from {addr}: {e}"))?;
        let text = String::from_utf8_lossy(&text).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.lines().next().unwrap_or("");
        if status.split(' ').nth(1) != Some("200") {
            return Err(format!("GET http://{addr}{path}: {status}"));
        }
        Ok(body.to_owned())
    };
    fetch
        .or(async {
            glommio::timer::sleep(timeout).await;
            Err(format!(
                "GET http://{addr}{path}: no answer within {timeout:?}"
            ))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_into_path_query_headers_and_cookies() {
        let r = parse_head(
            "GET /api/message?topic=T%231&key=a+b&x HTTP/1.1\r\nHost: h\r\nCookie: a=1; console_session=abc",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/api/message");
        assert_eq!(r.param("topic"), Some("T#1"));
        assert_eq!(r.param("key"), Some("a b"));
        assert_eq!(r.param("x"), Some(""));
        assert_eq!(r.header("host"), Some("h"));
        assert_eq!(r.cookie("console_session"), Some("abc"));
        assert_eq!(r.cookie("b"), None);
        assert!(parse_head("garbage").is_err());
        assert!(parse_head("GET / SPDY/3").is_err());
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn responses_carry_length_and_extra_headers() {
        let r = Response::new(200, "text/plain", "hi").with_header("Set-Cookie", "a=b".into());
        let text = String::from_utf8(r.encode()).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Length: 2\r\n"), "{text}");
        assert!(text.contains("Set-Cookie: a=b\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nhi"), "{text}");
    }
}
