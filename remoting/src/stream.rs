//! The byte streams a connection is served over: a plain glommio socket or TLS over one. Both give
//! the socket underneath, whose descriptor closes the connection (`shutdown`) whatever rides on it.

use glommio::net::TcpStream;

/// A stream `serve_connection_with` can serve: generic, so the plaintext path stays a plain socket.
pub trait Connection: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + 'static {
    /// The TCP socket underneath.
    fn tcp(&self) -> &TcpStream;
    /// Whether bytes written to the socket's descriptor are what the peer reads (no TLS between):
    /// then responses may be written to it directly, with vectored sends.
    fn is_plain(&self) -> bool {
        false
    }
}

impl Connection for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
    fn is_plain(&self) -> bool {
        true
    }
}

impl Connection for futures_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

impl Connection for futures_rustls::client::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}
