//! ACL 2.0 for the SDKs (Apache RocketMQ 5.3+'s gRPC `AuthenticationPipeline` and
//! `AuthorizationPipeline` in cluster mode): each request's signature is checked against the user
//! (username = accessKey, password = secretKey) the brokers hold, then what it asks is checked against
//! that user's ACL, from the client's IP; users and ACLs are read from a broker and cached. Refusals
//! are `UNAUTHORIZED` with Apache's texts. The proxy's own requests to brokers are signed with
//! `innerClientAuthenticationCredentials`.

pub mod cache;
mod check;
pub mod config;
pub mod fetch;
pub mod header;
pub mod request;
pub mod store;

pub use check::check;
