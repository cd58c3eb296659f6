//! Remoting over glommio TCP: framed connections, a request-serving loop and a request/response client.

// Bytes from the network are parsed here: no indexing or slicing that could panic on them.
#![warn(clippy::indexing_slicing)]

mod accept;
mod client;
mod error;
mod framed;
mod limits;
mod listen;
pub mod sd_notify;
mod server;
mod stream;
mod timeout;
pub mod tls;

pub use accept::{accept_connections, accept_connections_tls};
pub use client::{resolve, Client, RpcHook, ServerRequestHandler};
pub use error::RemotingError;
pub use framed::{FrameReader, FrameWriter};
pub use limits::{defaults as limit_defaults, Admitted, ConnectionGate, ConnectionLimits};
pub use listen::bind;
pub use server::{
    serve_connection, serve_connection_with, ConnectionContext, Handler, ResponseSink, Serve,
};
pub use stream::Connection;
pub use timeout::with_timeout;
