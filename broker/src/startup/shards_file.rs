//! `storePathRootDir/shards.json`: the shard count and routing mode the store was created with. Queue
//! ownership depends on the count, and in `direct` mode consumer offsets, queue ids and message ids
//! belong to each shard's own brokerName, so a restart with another count or mode would strand
//! messages or consumers' places: refuse, saying why. (With one shard the modes are the same broker.)

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::ShardRouting;
use crate::error::BrokerError;
use crate::state::persist::{read_optional, write_atomic};

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShardsFile {
    shard_count: usize,
    /// Absent in stores written before shards could be brokers: those were `forward`.
    #[serde(default = "forward")]
    shard_routing: String,
}

fn forward() -> String {
    ShardRouting::Forward.as_str().to_owned()
}

/// Records `shards` and `routing` on first start; on later starts checks they match.
pub fn check_or_record(
    root: &Path,
    shards: usize,
    routing: ShardRouting,
) -> Result<(), BrokerError> {
    let path = root.join("shards.json");
    match read_optional(&path).map_err(|e| BrokerError::io(path.display(), e))? {
        Some(bytes) => {
            let file: ShardsFile =
                serde_json::from_slice(&bytes).map_err(|e| BrokerError::BadMetadata {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
            if file.shard_count != shards {
                return Err(BrokerError::ShardCount(format!(
                    "the store in {} was created with {} shards but this start has {shards}; queues are \
                     assigned to shards by a hash of the shard count, so messages would become unreachable. \
                     Set shardCount = {} in the config (or use a new storePathRootDir)",
                    root.display(),
                    file.shard_count,
                    file.shard_count
                )));
            }
            if shards > 1 && file.shard_routing != routing.as_str() {
                return Err(BrokerError::ShardCount(format!(
                    "the store in {} was created with shardRouting = {} but this start has {}; \
                     brokerNames (and with them consumer offsets, queue ids and message ids) differ \
                     between the modes. Set shardRouting = {} in the config (or use a new storePathRootDir)",
                    root.display(),
                    file.shard_routing,
                    routing.as_str(),
                    file.shard_routing
                )));
            }
            Ok(())
        }
        None => {
            let bytes = serde_json::to_vec(&ShardsFile {
                shard_count: shards,
                shard_routing: routing.as_str().to_owned(),
            })
            .unwrap_or_default();
            write_atomic(&path, &bytes).map_err(|e| BrokerError::io(path.display(), e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_records_and_another_count_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        check_or_record(dir.path(), 3, ShardRouting::Direct).unwrap();
        check_or_record(dir.path(), 3, ShardRouting::Direct).unwrap();
        let err = check_or_record(dir.path(), 2, ShardRouting::Direct)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("3 shards") && err.contains("shardCount = 3"),
            "{err}"
        );
        let err = check_or_record(dir.path(), 3, ShardRouting::Forward)
            .unwrap_err()
            .to_string();
        assert!(err.contains("shardRouting = direct"), "{err}");
        std::fs::write(dir.path().join("shards.json"), b"{not json").unwrap();
        assert!(matches!(
            check_or_record(dir.path(), 3, ShardRouting::Direct),
            Err(BrokerError::BadMetadata { .. })
        ));
    }

    #[test]
    fn a_store_from_before_routing_modes_is_forward() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shards.json"), br#"{"shardCount":2}"#).unwrap();
        check_or_record(dir.path(), 2, ShardRouting::Forward).unwrap();
        assert!(check_or_record(dir.path(), 2, ShardRouting::Direct).is_err());
        // One shard: both modes are the same single broker.
        let one = tempfile::tempdir().unwrap();
        check_or_record(one.path(), 1, ShardRouting::Forward).unwrap();
        check_or_record(one.path(), 1, ShardRouting::Direct).unwrap();
    }
}
