//! `config/delayOffset.json`: the delivery offset of each delay level, in RocketMQ's format
//! (`{"offsetTable":{1:123,2:0}}`, level -> next SCHEDULE_TOPIC_XXXX queue offset to deliver).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file's name under `<storePathRootDir>/config` (one broker per process).
pub const FILE_NAME: &str = "delayOffset.json";

/// The file of the broker `shard` belongs to: `delayOffset.json` for the process's one broker, or
/// `delayOffset-<shard>.json` when each shard is a broker with delay levels of its own.
pub fn path(store_root: &Path, shard: Option<usize>) -> PathBuf {
    let name = match shard {
        Some(id) => format!("delayOffset-{id}.json"),
        None => FILE_NAME.to_owned(),
    };
    store_root.join("config").join(name)
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wrapper {
    #[serde(default)]
    offset_table: BTreeMap<i32, i64>,
}

/// Parses RocketMQ's `DelayOffsetSerializeWrapper` JSON (fastjson's unquoted integer keys accepted).
/// Levels < 1 and negative offsets are refused: they cannot come from a sane master or file.
pub fn parse(json: &[u8]) -> Result<BTreeMap<i32, i64>, String> {
    let wrapper: Wrapper = protocol::body::from_json(json).map_err(|e| e.to_string())?;
    if let Some((level, offset)) = wrapper
        .offset_table
        .iter()
        .find(|(level, offset)| **level < 1 || **offset < 0)
    {
        return Err(format!(
            "bad delay offset entry: level {level}, offset {offset}"
        ));
    }
    Ok(wrapper.offset_table)
}

/// Encodes the table as RocketMQ writes it (fastjson: integer keys unquoted).
pub fn encode(table: &BTreeMap<i32, i64>) -> Vec<u8> {
    let entries: Vec<String> = table.iter().map(|(l, o)| format!("{l}:{o}")).collect();
    format!("{{\"offsetTable\":{{{}}}}}", entries.join(",")).into_bytes()
}

/// Reads the file; an absent file is an empty table.
pub fn load(path: &Path) -> Result<BTreeMap<i32, i64>, String> {
    match crate::state::persist::read_optional(path) {
        Ok(Some(bytes)) => parse(&bytes).map_err(|e| format!("{}: {e}", path.display())),
        Ok(None) => Ok(BTreeMap::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_rocketmq_format() {
        let table = BTreeMap::from([(1, 12), (3, 0), (18, 7)]);
        let json = encode(&table);
        assert_eq!(
            String::from_utf8_lossy(&json),
            "{\"offsetTable\":{1:12,3:0,18:7}}"
        );
        assert_eq!(parse(&json).unwrap(), table);
        assert_eq!(
            parse(b"{\"offsetTable\":{\"2\":5}}").unwrap(),
            BTreeMap::from([(2, 5)])
        );
        assert_eq!(parse(b"{}").unwrap(), BTreeMap::new());
        assert_eq!(encode(&BTreeMap::new()), b"{\"offsetTable\":{}}");
    }

    #[test]
    fn refuses_bad_tables() {
        assert!(parse(b"{\"offsetTable\":{0:5}}").is_err());
        assert!(parse(b"{\"offsetTable\":{1:-5}}").is_err());
        assert!(parse(b"not json").is_err());
        assert!(parse(b"{\"offsetTable\":{1:\"x\"}}").is_err());
    }
}
