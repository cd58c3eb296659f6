//! Reading a config file (flat TOML or Java `.properties`) into key/value pairs, then into `BrokerConfig`.

use std::path::Path;

use super::error::LoadError;
use super::keys::{BrokerConfig, ConfigIssue};

/// Parses a Java properties file: `key=value` or `key: value`, `#`/`!` comments, `\` line continuations.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(stripped) = line.strip_suffix('\\') {
            pending.push_str(stripped);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let split = entry.find(['=', ':']);
        let (key, value) = match split {
            Some(i) => (&entry[..i], &entry[i + 1..]),
            None => (entry.as_str(), ""),
        };
        let key = key.trim();
        if !key.is_empty() {
            out.push((key.to_owned(), value.trim().to_owned()));
        }
    }
    out
}

/// Parses flat TOML: every value a string, integer, float or boolean.
pub fn parse_toml(text: &str, path: &str) -> Result<Vec<(String, String)>, LoadError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| LoadError::Toml {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    table
        .into_iter()
        .map(|(key, value)| {
            let text = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Datetime(d) => d.to_string(),
                toml::Value::Array(_) | toml::Value::Table(_) => {
                    return Err(LoadError::NotFlat { key });
                }
            };
            Ok((key, text))
        })
        .collect()
}

/// Loads a config file; `.properties` files are read as Java properties, everything else as TOML.
/// The overlay of keys changed at run time (`overlay`), if the store has one, applies over it.
/// Returns the config and the keys that were not applied (unknown or not supported).
pub fn load(path: &Path) -> Result<(BrokerConfig, Vec<ConfigIssue>), LoadError> {
    let pairs = read_pairs(path)?;
    let (cfg, issues) = BrokerConfig::from_pairs(pairs.clone())?;
    let overlay = super::overlay::read_overlay(&cfg.store_path_root_dir).map_err(|source| {
        LoadError::Read {
            path: super::overlay::overlay_path(&cfg.store_path_root_dir)
                .display()
                .to_string(),
            source,
        }
    })?;
    if overlay.is_empty() {
        return Ok((cfg, issues));
    }
    tracing::info!(
        "applying {} key(s) of {} over {}",
        overlay.len(),
        super::overlay::overlay_path(&cfg.store_path_root_dir).display(),
        path.display()
    );
    BrokerConfig::from_pairs(pairs.into_iter().chain(overlay))
}

fn read_pairs(path: &Path) -> Result<Vec<(String, String)>, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: shown.clone(),
        source,
    })?;
    if path.extension().is_some_and(|e| e == "properties") {
        Ok(parse_properties(&text))
    } else {
        parse_toml(&text, &shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_syntax() {
        let text = "# comment\n! also\nbrokerName=broker-a\n  listenPort : 10911\nnamesrvAddr=a:9876;\\\n  b:9876\nempty=\n";
        let pairs = parse_properties(text);
        assert_eq!(
            pairs,
            vec![
                ("brokerName".to_owned(), "broker-a".to_owned()),
                ("listenPort".to_owned(), "10911".to_owned()),
                ("namesrvAddr".to_owned(), "a:9876;b:9876".to_owned()),
                ("empty".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn overlay_applies_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let file = dir.path().join("broker.properties");
        std::fs::write(
            &file,
            format!("brokerPermission=6\nmaxMessageSize=2048\nstorePathRootDir={}\n", store.display()),
        )
        .unwrap();
        let (cfg, _) = load(&file).unwrap();
        assert_eq!(cfg.broker_permission, 6);
        std::fs::create_dir_all(store.join("config")).unwrap();
        std::fs::write(super::super::overlay::overlay_path(&store), "brokerPermission=4\n").unwrap();
        let (cfg, _) = load(&file).unwrap();
        assert_eq!(cfg.broker_permission, 4);
        assert_eq!(cfg.max_message_size, 2048);
    }

    #[test]
    fn toml_must_be_flat() {
        assert!(parse_toml("a = 1\nb = \"x\"\nc = true", "t").is_ok());
        assert!(matches!(
            parse_toml("[t]\na = 1", "t"),
            Err(LoadError::NotFlat { .. })
        ));
        assert!(matches!(
            parse_toml("a = ", "t"),
            Err(LoadError::Toml { .. })
        ));
    }
}
