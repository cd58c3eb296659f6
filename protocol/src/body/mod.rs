//! Request/response bodies that RocketMQ encodes as JSON (fastjson, camelCase field names).
//!
//! Parse with [`from_json`], which also accepts fastjson's unquoted integer map keys
//! (`{0:"host:port"}`, written by the Java name server and in offset tables); write with
//! [`to_json`], which always produces standard JSON (quoted keys), as Java clients accept.

mod admin_stats;
mod admin_tools;
mod cluster;
mod consumer;
mod consumer_status;
mod heartbeat;
mod java_enum;
mod json_body;
mod json_compat;
mod maintenance;
mod object_keys;
mod offset;
mod pop;
mod register;
mod register_compressed;
mod route;

pub use admin_stats::*;
pub use admin_tools::*;
pub use cluster::*;
pub use consumer::*;
pub use consumer_status::*;
pub use heartbeat::*;
pub use json_body::{from_json, to_json, BodyError};
pub use json_compat::quote_integer_keys;
pub use maintenance::*;
pub use object_keys::{from_fastjson, message_queue_json, quote_object_keys};
pub use offset::*;
pub use pop::*;
pub use register::*;
pub use register_compressed::*;
pub use route::*;
