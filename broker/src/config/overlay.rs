//! The overlay file UPDATE_BROKER_CONFIG persists: `storePathRootDir/config/broker.properties.override`,
//! Java properties with only the keys changed at run time. `load` applies it over the config file at
//! start, so a changed key survives a restart.

use std::path::{Path, PathBuf};

use super::file::parse_properties;

/// The overlay's path for a store root.
pub fn overlay_path(store_root: &Path) -> PathBuf {
    store_root.join("config").join("broker.properties.override")
}

/// The overlay's pairs; empty when there is no file. A file that cannot be read is an error.
pub fn read_overlay(store_root: &Path) -> std::io::Result<Vec<(String, String)>> {
    match std::fs::read_to_string(overlay_path(store_root)) {
        Ok(text) => Ok(parse_properties(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The overlay text after `changes`: earlier keys kept unless changed, in their first order.
pub fn merged_overlay(existing: &[(String, String)], changes: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = existing.to_vec();
    for (key, value) in changes {
        match pairs.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1.clone_from(value),
            None => pairs.push((key.clone(), value.clone())),
        }
    }
    let mut out = String::from(
        "# Written by the broker for UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig);\n\
         # applied over the config file at start. Delete a line to fall back to the file.\n",
    );
    for (key, value) in pairs {
        out.push_str(&key);
        out.push('=');
        out.push_str(&value);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_order_and_replaces_values() {
        let existing = vec![
            ("brokerPermission".to_owned(), "4".to_owned()),
            ("maxMessageSize".to_owned(), "1024".to_owned()),
        ];
        let changes = vec![
            ("brokerPermission".to_owned(), "6".to_owned()),
            ("deleteWhen".to_owned(), "03".to_owned()),
        ];
        let text = merged_overlay(&existing, &changes);
        assert_eq!(
            parse_properties(&text),
            vec![
                ("brokerPermission".to_owned(), "6".to_owned()),
                ("maxMessageSize".to_owned(), "1024".to_owned()),
                ("deleteWhen".to_owned(), "03".to_owned()),
            ]
        );
    }

    #[test]
    fn missing_overlay_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_overlay(dir.path()).unwrap().is_empty());
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(overlay_path(dir.path()), "brokerPermission=4\n").unwrap();
        assert_eq!(
            read_overlay(dir.path()).unwrap(),
            vec![("brokerPermission".to_owned(), "4".to_owned())]
        );
    }
}
