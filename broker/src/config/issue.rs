//! `ConfigIssue`: a config key that was read but not applied, reported at start.

/// A key that was read but not applied, reported at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigIssue {
    /// Not a key Apache RocketMQ or this broker knows (probably a typo).
    Unknown(String),
    /// A store path key in an UPDATE_BROKER_CONFIG (read only at start).
    NotSupported(String),
    /// An Apache RocketMQ key this broker does not use, and why that is harmless here.
    Moot { key: String, reason: String },
    /// A key of the config file whose value an earlier UPDATE_BROKER_CONFIG replaced: the value in
    /// the override file (`overlay`) is the one in force.
    Overridden {
        key: String,
        file_value: String,
        value: String,
        overlay: String,
    },
}

impl std::fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigIssue::Unknown(k) => write!(f, "unknown config key `{k}` ignored"),
            ConfigIssue::NotSupported(k) => {
                write!(
                    f,
                    "config key `{k}` is a RocketMQ key this broker does not use; ignored"
                )
            }
            ConfigIssue::Moot { key, reason } => {
                write!(f, "config key `{key}` is accepted but not used: {reason}")
            }
            ConfigIssue::Overridden {
                key,
                file_value,
                value,
                overlay,
            } => write!(
                f,
                "config key `{key}` is {value} as set at run time (updateBrokerConfig) in \
                 {overlay}, not {file_value} as the config file says; delete its line there to \
                 use the file's value"
            ),
        }
    }
}
