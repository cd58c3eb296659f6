//! JSON body encoding: `BodyError`, `from_json` (fastjson-tolerant) and `to_json`.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::json_compat::quote_integer_keys;

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
