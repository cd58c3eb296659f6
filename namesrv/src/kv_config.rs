//! The name server's KV config (namespace -> key -> value), as Apache's `kvConfig.json`:
//! `{"configTable":{"<namespace>":{"<key>":"<value>"}}}`, written whole on every change (rare: an
//! operator's `updateKvConfig`, or ORDER_TOPIC_CONFIG entries) by a write to a temporary file and a
//! rename, so a crash leaves the old or the new table, never half of one.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The namespace whose entries (`topic` -> `brokerName:queueNum;...`) the route of an ordered topic
/// carries as `orderTopicConf` when `orderMessageEnable` is on.
pub const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigFile {
    #[serde(default)]
    config_table: BTreeMap<String, BTreeMap<String, String>>,
}

/// The table and where it is kept.
#[derive(Debug)]
pub struct KvConfig {
    path: PathBuf,
    table: BTreeMap<String, BTreeMap<String, String>>,
}

impl KvConfig {
    /// Loads `path`; a missing file is an empty table, an unreadable one an error (starting empty
    /// would silently drop an operator's settings at the next write).
    pub fn load(path: &Path) -> Result<KvConfig, String> {
        let table = match std::fs::read(path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => BTreeMap::new(),
            Ok(bytes) => {
                serde_json::from_slice::<KvConfigFile>(&bytes)
                    .map_err(|e| format!("KV config {}: {e}", path.display()))?
                    .config_table
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(format!("KV config {}: {e}", path.display())),
        };
        Ok(KvConfig {
            path: path.to_owned(),
            table,
        })
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.table.get(namespace)?.get(key).map(String::as_str)
    }

    /// Every entry of a namespace (empty when there is none).
    pub fn namespace(&self, namespace: &str) -> BTreeMap<String, String> {
        self.table.get(namespace).cloned().unwrap_or_default()
    }

    /// Sets an entry and writes the file; on a failed write the table keeps the old value.
    pub fn put(&mut self, namespace: &str, key: &str, value: &str) -> Result<(), String> {
        let previous = self
            .table
            .entry(namespace.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        self.persist().inspect_err(|_| {
            if let Some(entries) = self.table.get_mut(namespace) {
                match &previous {
                    Some(old) => {
                        entries.insert(key.to_owned(), old.clone());
                    }
                    None => {
                        entries.remove(key);
                    }
                }
            }
        })
    }

    /// Removes an entry (a missing one is not an error, as in Apache) and writes the file.
    pub fn delete(&mut self, namespace: &str, key: &str) -> Result<(), String> {
        let Some(entries) = self.table.get_mut(namespace) else {
            return Ok(());
        };
        let Some(old) = entries.remove(key) else {
            return Ok(());
        };
        if entries.is_empty() {
            self.table.remove(namespace);
        }
        self.persist().inspect_err(|_| {
            self.table
                .entry(namespace.to_owned())
                .or_default()
                .insert(key.to_owned(), old.clone());
        })
    }

    fn persist(&self) -> Result<(), String> {
        let file = KvConfigFile {
            config_table: self.table.clone(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        write_atomically(&self.path, &json)
            .map_err(|e| format!("cannot write KV config {}: {e}", self.path.display()))
    }
}

/// Writes `bytes` to `path` through a synced temporary file renamed over it.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_reload_and_deletes_are_kept() {
        let dir = std::env::temp_dir().join(format!("kvconfig-{}", std::process::id()));
        let path = dir.join("kvConfig.json");
        let _ = std::fs::remove_dir_all(&dir);
        let mut kv = KvConfig::load(&path).unwrap();
        assert_eq!(kv.get("ns", "k"), None);
        kv.put("ns", "k", "v").unwrap();
        kv.put("ns", "k2", "v2").unwrap();
        kv.delete("ns", "k2").unwrap();
        let again = KvConfig::load(&path).unwrap();
        assert_eq!(again.get("ns", "k"), Some("v"));
        assert_eq!(again.get("ns", "k2"), None);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"configTable\""), "{text}");
        std::fs::write(&path, b"{not json").unwrap();
        assert!(KvConfig::load(&path).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
