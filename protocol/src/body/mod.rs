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
mod json_compat;
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
pub use json_compat::quote_integer_keys;
pub use object_keys::{from_fastjson, message_queue_json, quote_object_keys};
pub use offset::*;
pub use pop::*;
pub use register::*;
use register_compressed::has_zlib_header;
pub use register_compressed::*;
pub use route::*;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why a body is not valid JSON of the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad JSON body: {0}")]
pub struct BodyError(pub String);

/// Parses a JSON body, accepting fastjson's unquoted integer map keys.
pub fn from_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, BodyError> {
    match serde_json::from_slice(body) {
        Ok(value) => Ok(value),
        Err(first) => {
            // Only non-standard JSON pays for the rewrite.
            let text = std::str::from_utf8(body).map_err(|_| BodyError(first.to_string()))?;
            match quote_integer_keys(text) {
                std::borrow::Cow::Owned(fixed) => {
                    serde_json::from_str(&fixed).map_err(|e| BodyError(e.to_string()))
                }
                std::borrow::Cow::Borrowed(_) => Err(BodyError(first.to_string())),
            }
        }
    }
}

/// Writes a body as standard, compact JSON.
pub fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain data types into a Vec cannot fail (string keys, no custom errors).
    serde_json::to_vec(value).unwrap_or_default()
}
