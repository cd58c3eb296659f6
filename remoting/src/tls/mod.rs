//! TLS on the remoting ports, as Apache RocketMQ 5 has it: Apache's `tls.*` settings, servers in
//! `disabled`, `permissive` or `enforcing` mode with optional mutual TLS, and TLS clients. rustls
//! (ring provider) over glommio's sockets through futures-io.

mod client;
mod pem;
mod server;
mod settings;
mod verify;

pub use client::{
    client_config, default_client, handshake, set_default_client, set_default_client_from_env,
};
pub use futures_rustls::rustls::{ClientConfig, ServerConfig};
pub use server::{server_config, Accepted, ServerTls, HANDSHAKE_TIMEOUT};
pub use settings::{
    ClientAuth, ServerMode, TlsSettings, CLIENT_KEYS, DEFAULT_CONFIG_FILE, ENABLE_KEY,
    KEY_PASSWORD_REFUSED, PASSWORD_KEYS, SERVER_KEYS,
};
