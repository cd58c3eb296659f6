//! The name server's `-c` file: Apache's `namesrv.properties` keys (`key=value` lines, as
//! `mqnamesrv -c` reads them), each applied or classified (`config_keys`). Flags override it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use apache_keys::Class;

use crate::config_keys;

/// The settings a file gave; `None` where it said nothing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileSettings {
    pub bind_address: Option<IpAddr>,
    pub listen_port: Option<u16>,
    pub kv_config_path: Option<PathBuf>,
    pub config_store_path: Option<PathBuf>,
    pub order_message_enable: Option<bool>,
    pub enable_controller_in_namesrv: Option<bool>,
    pub scan_interval_ms: Option<u64>,
    pub server_max_connections: Option<usize>,
    pub idle_seconds: Option<u64>,
    pub frame_timeout_seconds: Option<u64>,
    pub write_stall_seconds: Option<u64>,
    pub max_pending_response_bytes: Option<u64>,
    /// `tls.*` (Apache's JVM system properties, file keys here).
    pub tls: remoting::tls::TlsSettings,
}

fn parsed<T: std::str::FromStr>(key: &str, value: &str, what: &str) -> Result<Option<T>, String> {
    value
        .trim()
        .parse()
        .map(Some)
        .map_err(|_| format!("config key `{key}` has an invalid value `{value}`: expected {what}"))
}

impl FileSettings {
    /// Reads `path` (Java properties). Answers the settings and the warnings for keys not used or
    /// not known; a bad value or a refused key is an error naming the key.
    pub fn read(path: &Path) -> Result<(FileSettings, Vec<String>), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut settings = FileSettings::default();
        let mut warnings = Vec::new();
        for (key, value) in protocol::properties_text::parse(&text) {
            let outcome = match config_keys::class_of(&key) {
                Some(Class::Applied) => settings.set(&key, &value).map(|_| None),
                class => apache_keys::unapplied(class, &key, &value),
            };
            if let Some(warning) = outcome.map_err(|e| format!("{}: {e}", path.display()))? {
                warnings.push(warning);
            }
        }
        Ok((settings, warnings))
    }

    /// Applies one key: `Ok(true)` when it is a key this reader applies.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let v = value.trim();
        if remoting::tls::SERVER_KEYS.contains(&key) {
            return match self.tls.set(key, v) {
                Some(Err(e)) => Err(format!(
                    "config key `{key}` has an invalid value `{v}`: {e}"
                )),
                _ => Ok(true),
            };
        }
        match key {
            "bindAddress" => self.bind_address = parsed(key, v, "an IP address")?,
            "listenPort" => self.listen_port = parsed(key, v, "a port")?,
            "kvConfigPath" => self.kv_config_path = Some(PathBuf::from(v)),
            "configStorePath" => self.config_store_path = Some(PathBuf::from(v)),
            "orderMessageEnable" => self.order_message_enable = parsed(key, v, "true or false")?,
            "enableControllerInNamesrv" => {
                self.enable_controller_in_namesrv = parsed(key, v, "true or false")?
            }
            "scanNotActiveBrokerInterval" => match parsed::<u64>(key, v, "milliseconds > 0")? {
                Some(0) | None => return Err(format!("config key `{key}` must be above 0")),
                ms => self.scan_interval_ms = ms,
            },
            "serverMaxConnectionsPerShard" => match parsed::<usize>(key, v, "a count > 0")? {
                Some(0) | None => return Err(format!("config key `{key}` must be above 0")),
                n => self.server_max_connections = n,
            },
            "serverChannelMaxIdleTimeSeconds" => self.idle_seconds = parsed(key, v, "seconds")?,
            "serverFrameTimeoutSeconds" => self.frame_timeout_seconds = parsed(key, v, "seconds")?,
            "serverWriteStallTimeoutSeconds" => {
                self.write_stall_seconds = parsed(key, v, "seconds")?
            }
            "serverMaxPendingResponseBytes" => {
                self.max_pending_response_bytes = parsed(key, v, "a byte count")?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apaches_keys_are_read_and_the_others_reported_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv.properties");
        std::fs::write(
            &path,
            "listenPort=9877\norderMessageEnable=true\nscanNotActiveBrokerInterval=3000\n\
             serverWorkerThreads=8\nlistenPrt=1\nenableAllTopicList=true\n",
        )
        .unwrap();
        let (s, warnings) = FileSettings::read(&path).unwrap();
        assert_eq!(s.listen_port, Some(9877));
        assert_eq!(s.order_message_enable, Some(true));
        assert_eq!(s.scan_interval_ms, Some(3000));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("`serverWorkerThreads` is accepted but not used: Netty"));
        assert_eq!(warnings[1], "unknown config key `listenPrt` ignored");
        std::fs::write(&path, "enableTopicList=false\n").unwrap();
        let err = FileSettings::read(&path).unwrap_err();
        assert!(
            err.contains("enableTopicList") && err.contains("remove the key"),
            "{err}"
        );
        std::fs::write(&path, "listenPort=x\n").unwrap();
        assert!(FileSettings::read(&path)
            .unwrap_err()
            .contains("listenPort"));
    }
}
