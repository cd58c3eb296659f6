//! `LoadError`: why a config file could not be used.

/// Why a config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config {path} is not valid TOML: {message}")]
    Toml { path: String, message: String },
    #[error("config key `{key}` must be a plain value, not a table or array")]
    NotFlat { key: String },
    #[error("config key `{key}` has an invalid value `{value}`: {reason}")]
    BadValue {
        key: String,
        value: String,
        reason: String,
    },
}
