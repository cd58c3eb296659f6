//! Atomic metadata files: write a temp file, fsync it, rename it over the old one, fsync the directory,
//! so a crash leaves either the old or the new file, never a half-written one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (blocking; small files only).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)?;
    let mut tmp_name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    // The rename itself must be durable too.
    std::fs::File::open(&dir)?.sync_all()
}

/// `write_atomic` on glommio's blocking-thread pool, so a shard never stalls on fsync.
pub async fn write_atomic_off_thread(path: PathBuf, bytes: Vec<u8>) -> std::io::Result<()> {
    glommio::executor()
        .spawn_blocking(move || write_atomic(&path, &bytes))
        .await
}

/// Reads a metadata file; `Ok(None)` when it does not exist.
pub fn read_optional(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("topics.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(
            read_optional(&path).unwrap().as_deref(),
            Some(&b"second"[..])
        );
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("topics.json")]);
        assert_eq!(read_optional(&dir.path().join("missing")).unwrap(), None);
    }
}
