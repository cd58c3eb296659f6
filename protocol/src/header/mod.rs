//! Typed request/response headers: conversions between a command's `extFields` and structs with
//! RocketMQ's field names. A missing required field is a [`HeaderError`] naming it; optional
//! fields are `Option`. Fields this crate does not model (e.g. `bname`, `ns`, `AccessKey`) are
//! ignored when reading.

mod admin_stats;
mod admin_tools;
mod auth;
mod consumer;
pub mod extra_info;
mod fields;
mod maintenance;
mod namesrv;
mod offset;
mod pop;
mod pull;
mod query;
mod recall;
mod send;
mod send_view;
mod topic;
mod transaction;

pub use admin_stats::*;
pub use admin_tools::*;
pub use auth::*;
pub use consumer::*;
pub use fields::{CommandHeader, FieldKind, HeaderError, HeaderField, HeaderValue};
pub use maintenance::*;
pub use namesrv::*;
pub use offset::*;
pub use pop::*;
pub use pull::*;
pub use query::*;
pub use recall::*;
pub use send::*;
pub use send_view::SendHeader;
pub use topic::*;
pub use transaction::*;
