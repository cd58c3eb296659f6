//! Apache's per-part store paths (`storePathCommitLog`, `storePathConsumeQueue`, `storePathIndex`,
//! `storeCheckpoint`). This broker keeps every part per shard under `storePathRootDir/shard-<N>`, so
//! a path is accepted only when it is Apache's default under `storePathRootDir`, where nothing moves;
//! any other value would be silently ignored and is refused instead.

use std::path::{Path, PathBuf};

use super::error::LoadError;

/// The keys, with the part's name under the root in Apache's layout and in each shard's folder here.
const PARTS: &[(&str, &str)] = &[
    ("storePathCommitLog", "commitlog"),
    ("storePathConsumeQueue", "consumequeue"),
    ("storePathIndex", "index"),
    ("storeCheckpoint", "checkpoint"),
];

/// The part a store path key names, if `key` is one.
pub fn part(key: &str) -> Option<&'static str> {
    PARTS.iter().find(|(k, _)| *k == key).map(|(_, p)| *p)
}

/// `Ok` when `value` is Apache's default for `key` under `root`; else why the broker cannot use it.
pub fn check(key: &str, value: &str, root: &Path) -> Result<(), LoadError> {
    let Some(part) = part(key) else {
        return Ok(());
    };
    let default = root.join(part);
    if Path::new(value.trim()) == default {
        return Ok(());
    }
    let per_shard: PathBuf = root.join("shard-<N>").join(part);
    Err(LoadError::BadValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: format!(
            "this broker keeps every shard's {part} in {} (storePathRootDir/shard-<N>/{part}) and \
             cannot place it elsewhere; remove the key (or set it to {}) and choose the disk with \
             storePathRootDir",
            per_shard.display(),
            default.display()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_defaults_under_the_root_are_accepted() {
        let root = Path::new("/data/store");
        assert!(check("storePathCommitLog", "/data/store/commitlog", root).is_ok());
        assert!(check("storePathCommitLog", "/data/store//commitlog/", root).is_ok());
        assert!(check("storePathConsumeQueue", "/data/store/consumequeue", root).is_ok());
        assert!(check("storePathIndex", "/data/store/index", root).is_ok());
        assert!(check("storeCheckpoint", "/data/store/checkpoint", root).is_ok());
    }

    #[test]
    fn other_places_are_refused_naming_where_the_part_lives() {
        let root = Path::new("/data/store");
        let err = check("storePathCommitLog", "/fast/commitlog", root).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("storePathCommitLog"), "{text}");
        assert!(text.contains("/data/store/shard-<N>/commitlog"), "{text}");
        assert!(check("storeCheckpoint", "/data/store/cp", root).is_err());
        assert!(check("storePathIndex", "/data/other/index", root).is_err());
    }
}
