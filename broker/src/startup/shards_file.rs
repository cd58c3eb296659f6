//! `storePathRootDir/shards.json`: the shard count the store was created with. Queue ownership depends
//! on it, so a restart with another count would strand messages: refuse, saying why.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::state::persist::{read_optional, write_atomic};

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShardsFile {
    shard_count: usize,
}

/// Records `shards` on first start; on later starts checks it matches.
pub fn check_or_record(root: &Path, shards: usize) -> Result<(), BrokerError> {
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
            Ok(())
        }
        None => {
            let bytes = serde_json::to_vec(&ShardsFile {
                shard_count: shards,
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
        check_or_record(dir.path(), 3).unwrap();
        check_or_record(dir.path(), 3).unwrap();
        let err = check_or_record(dir.path(), 2).unwrap_err().to_string();
        assert!(
            err.contains("3 shards") && err.contains("shardCount = 3"),
            "{err}"
        );
        std::fs::write(dir.path().join("shards.json"), b"{not json").unwrap();
        assert!(matches!(
            check_or_record(dir.path(), 3),
            Err(BrokerError::BadMetadata { .. })
        ));
    }
}
