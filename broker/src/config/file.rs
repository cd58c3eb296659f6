//! Reading a config file (flat TOML or Java `.properties`) into key/value pairs.

use std::path::Path;

use super::error::LoadError;

pub use protocol::properties_text::parse as parse_properties;

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

/// The key/value pairs of a config file: `.properties` and `.conf` files (Apache's `conf/broker.conf`
/// and `broker-a.properties`) are read as Java properties, everything else as TOML.
pub fn read_pairs(path: &Path) -> Result<Vec<(String, String)>, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: shown.clone(),
        source,
    })?;
    if path
        .extension()
        .is_some_and(|e| e == "properties" || e == "conf")
    {
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
