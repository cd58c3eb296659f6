//! The overlay file UPDATE_BROKER_CONFIG persists: `storePathRootDir/config/broker.properties.override`,
//! Java properties with only the keys changed at run time. `load` reads the config file and applies
//! the overlay over it, so a changed key survives a restart.

use std::path::{Path, PathBuf};

use super::error::LoadError;
use super::file::{parse_properties, read_pairs};
use super::keys::{BrokerConfig, ConfigIssue};

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

/// Loads a config file; `.properties` files are read as Java properties, everything else as TOML.
/// The overlay of keys changed at run time, if the store has one, applies over it.
/// Returns the config and the keys that were not applied (unknown or not supported).
pub fn load(path: &Path) -> Result<(BrokerConfig, Vec<ConfigIssue>), LoadError> {
    let pairs = read_pairs(path)?;
    let (cfg, issues) = BrokerConfig::from_pairs(pairs.clone())?;
    let overlay = read_overlay(&cfg.store_path_root_dir).map_err(|source| LoadError::Read {
        path: overlay_path(&cfg.store_path_root_dir).display().to_string(),
        source,
    })?;
    if overlay.is_empty() {
        return Ok((cfg, issues));
    }
    // Logging starts after the config is read: what the overlay replaced is reported as issues.
    let shown = overlay_path(&cfg.store_path_root_dir).display().to_string();
    let overridden: Vec<ConfigIssue> = overlay
        .iter()
        .filter_map(|(key, value)| {
            let (_, file_value) = pairs.iter().rev().find(|(k, _)| k == key)?;
            (file_value.trim() != value.trim()).then(|| ConfigIssue::Overridden {
                key: key.clone(),
                file_value: file_value.clone(),
                value: value.clone(),
                overlay: shown.clone(),
            })
        })
        .collect();
    let (cfg, mut issues) = BrokerConfig::from_pairs(pairs.into_iter().chain(overlay))?;
    issues.extend(overridden);
    Ok((cfg, issues))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_applies_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let file = dir.path().join("broker.properties");
        std::fs::write(
            &file,
            format!(
                "brokerPermission=6\nmaxMessageSize=2048\nstorePathRootDir={}\n",
                store.display()
            ),
        )
        .unwrap();
        let (cfg, _) = load(&file).unwrap();
        assert_eq!(cfg.broker_permission, 6);
        std::fs::create_dir_all(store.join("config")).unwrap();
        std::fs::write(overlay_path(&store), "brokerPermission=4\n").unwrap();
        let (cfg, issues) = load(&file).unwrap();
        assert_eq!(cfg.broker_permission, 4);
        assert_eq!(cfg.max_message_size, 2048);
        // The file's value that the override replaced is reported (logging starts after loading).
        let [ConfigIssue::Overridden {
            key,
            file_value,
            value,
            ..
        }] = issues.as_slice()
        else {
            panic!("{issues:?}");
        };
        assert_eq!(
            (key.as_str(), file_value.as_str(), value.as_str()),
            ("brokerPermission", "6", "4")
        );
        assert!(issues[0].to_string().contains("broker.properties.override"));
    }

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
