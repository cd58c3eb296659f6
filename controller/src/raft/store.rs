//! The raft log, vote and snapshot kept in `controllerStorePath`, and the state machine they rebuild.
//!
//! Layout: `vote.json`, `committed.json` (the last entry known committed), `log/<20-digit
//! index>.json` (one file per entry), `purged.json` (the last entry dropped after a snapshot),
//! `snapshot.json` (meta and state). Every file is written to a
//! temporary name, fsynced and renamed, then the directory is fsynced: a crash leaves the old file
//! or the new one, never half of one. The controller writes a few entries per broker event, so a
//! file per entry is cheap and keeps truncation a matter of deleting files.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs;
use std::io::{Cursor, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogState, RaftLogReader, RaftSnapshotBuilder, RaftStorage, Snapshot};
use openraft::{
    Entry, EntryPayload, LogId, OptionalSend, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership, Vote,
};
use serde::{Deserialize, Serialize};

use super::types::{NodeId, TypeConfig};
use crate::replicas::{ReplicasInfo, Reply};

type Node = openraft::BasicNode;
type StoreResult<T> = Result<T, StorageError<NodeId>>;

/// What `snapshot.json` holds.
#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<NodeId, Node>,
    /// JSON of the `ReplicasInfo` at `meta.last_log_id`.
    data: Vec<u8>,
}

struct Inner {
    dir: PathBuf,
    vote: Option<Vote<NodeId>>,
    committed: Option<LogId<NodeId>>,
    log: BTreeMap<u64, Entry<TypeConfig>>,
    last_purged: Option<LogId<NodeId>>,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, Node>,
    replicas: ReplicasInfo,
    snapshot: Option<StoredSnapshot>,
    snapshot_seq: u64,
}

/// The controller's raft storage; clones share it (openraft's log reader and snapshot builder are clones).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
}

fn io_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageError::IO {
        source: StorageIOError::write(&e),
    }
}

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_data()?;
    fs::rename(&tmp, dir.join(name))?;
    fs::File::open(dir)?.sync_all()
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, String> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn log_name(index: u64) -> String {
    format!("{index:020}.json")
}

impl Store {
    /// Opens (or creates) the store in `dir` and rebuilds the state from its snapshot; the log
    /// past the snapshot is applied again by openraft as it commits.
    pub fn open(dir: &Path) -> Result<Store, String> {
        let log_dir = dir.join("log");
        fs::create_dir_all(&log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
        let vote = read_json(&dir.join("vote.json"))?;
        let committed = read_json(&dir.join("committed.json"))?;
        let last_purged: Option<LogId<NodeId>> = read_json(&dir.join("purged.json"))?;
        let snapshot: Option<StoredSnapshot> = read_json(&dir.join("snapshot.json"))?;
        let mut log = BTreeMap::new();
        let entries = fs::read_dir(&log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
        for item in entries {
            let path = item.map_err(|e| e.to_string())?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                // A `.tmp` left by a crash in the middle of a write.
                let _ = fs::remove_file(&path);
                continue;
            }
            if let Some(entry) = read_json::<Entry<TypeConfig>>(&path)? {
                if last_purged.is_some_and(|p| entry.log_id.index <= p.index) {
                    let _ = fs::remove_file(&path);
                    continue;
                }
                log.insert(entry.log_id.index, entry);
            }
        }
        let (replicas, last_applied, membership) = match &snapshot {
            Some(s) => (
                serde_json::from_slice(&s.data).map_err(|e| format!("snapshot.json: {e}"))?,
                s.meta.last_log_id,
                s.meta.last_membership.clone(),
            ),
            None => (ReplicasInfo::default(), None, StoredMembership::default()),
        };
        tracing::info!(
            "raft store {}: snapshot at {:?}, committed {:?}, log {:?}..={:?}, purged up to {:?}, vote {:?}",
            dir.display(),
            last_applied,
            committed,
            log.keys().next(),
            log.keys().next_back(),
            last_purged,
            vote
        );
        tracing::debug!("state from the snapshot: {replicas:?}");
        Ok(Store {
            inner: Arc::new(Mutex::new(Inner {
                dir: dir.to_path_buf(),
                vote,
                committed,
                log,
                last_purged,
                last_applied,
                membership,
                replicas,
                snapshot,
                snapshot_seq: 0,
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every change is one assignment
        // after its file is written), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the applied state (on this controller: the leader's when it is the leader).
    pub fn read<T>(&self, f: impl FnOnce(&ReplicasInfo) -> T) -> T {
        f(&self.lock().replicas)
    }
}

impl RaftLogReader<TypeConfig> for Store {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StoreResult<Vec<Entry<TypeConfig>>> {
        Ok(self
            .lock()
            .log
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for Store {
    async fn build_snapshot(&mut self) -> StoreResult<Snapshot<TypeConfig>> {
        let mut inner = self.lock();
        let data = serde_json::to_vec(&inner.replicas).map_err(io_err)?;
        inner.snapshot_seq += 1;
        let snapshot_id = match inner.last_applied {
            Some(id) => format!("{}-{}-{}", id.leader_id, id.index, inner.snapshot_seq),
            None => format!("--{}", inner.snapshot_seq),
        };
        let meta = SnapshotMeta {
            last_log_id: inner.last_applied,
            last_membership: inner.membership.clone(),
            snapshot_id,
        };
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data: data.clone(),
        };
        let bytes = serde_json::to_vec(&stored).map_err(io_err)?;
        write_atomic(&inner.dir, "snapshot.json", &bytes).map_err(io_err)?;
        inner.snapshot = Some(stored);
        tracing::debug!("snapshot taken at {:?}", meta.last_log_id);
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

#[allow(deprecated)]
impl RaftStorage<TypeConfig> for Store {
    type LogReader = Store;
    type SnapshotBuilder = Store;

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StoreResult<()> {
        let mut inner = self.lock();
        let bytes = serde_json::to_vec(vote).map_err(io_err)?;
        write_atomic(&inner.dir, "vote.json", &bytes).map_err(io_err)?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> StoreResult<Option<Vote<NodeId>>> {
        Ok(self.lock().vote)
    }

    /// Kept so that a restart applies what was committed before it: a leader restored from its
    /// own committed vote appends no new entry, so without this it would neither re-apply the
    /// entries after the snapshot nor wait for them before answering a read.
    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StoreResult<()> {
        let mut inner = self.lock();
        if inner.committed == committed {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&committed).map_err(io_err)?;
        write_atomic(&inner.dir, "committed.json", &bytes).map_err(io_err)?;
        inner.committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> StoreResult<Option<LogId<NodeId>>> {
        Ok(self.lock().committed)
    }

    async fn get_log_state(&mut self) -> StoreResult<LogState<TypeConfig>> {
        let inner = self.lock();
        let last = inner
            .log
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(inner.last_purged);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn append_to_log<I>(&mut self, entries: I) -> StoreResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
    {
        let mut inner = self.lock();
        let log_dir = inner.dir.join("log");
        let mut wrote = false;
        for entry in entries {
            let bytes = serde_json::to_vec(&entry).map_err(io_err)?;
            let name = log_name(entry.log_id.index);
            let tmp = log_dir.join(format!("{name}.tmp"));
            let write = || -> std::io::Result<()> {
                let mut f = fs::File::create(&tmp)?;
                f.write_all(&bytes)?;
                f.sync_data()?;
                fs::rename(&tmp, log_dir.join(&name))
            };
            write().map_err(io_err)?;
            inner.log.insert(entry.log_id.index, entry);
            wrote = true;
        }
        if wrote {
            fs::File::open(&log_dir)
                .and_then(|d| d.sync_all())
                .map_err(io_err)?;
        }
        Ok(())
    }

    async fn delete_conflict_logs_since(&mut self, log_id: LogId<NodeId>) -> StoreResult<()> {
        let mut inner = self.lock();
        let doomed: Vec<u64> = inner.log.range(log_id.index..).map(|(i, _)| *i).collect();
        let log_dir = inner.dir.join("log");
        // Newest first: a crash half-way leaves a log without holes.
        for index in doomed.iter().rev() {
            match fs::remove_file(log_dir.join(log_name(*index))) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(e)),
            }
            inner.log.remove(index);
        }
        fs::File::open(&log_dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err)?;
        Ok(())
    }

    async fn purge_logs_upto(&mut self, log_id: LogId<NodeId>) -> StoreResult<()> {
        let mut inner = self.lock();
        let bytes = serde_json::to_vec(&log_id).map_err(io_err)?;
        write_atomic(&inner.dir, "purged.json", &bytes).map_err(io_err)?;
        inner.last_purged = Some(log_id);
        let doomed: Vec<u64> = inner.log.range(..=log_id.index).map(|(i, _)| *i).collect();
        let log_dir = inner.dir.join("log");
        for index in doomed {
            // Left-over files are dropped at the next start (they are below `purged.json`).
            let _ = fs::remove_file(log_dir.join(log_name(index)));
            inner.log.remove(&index);
        }
        Ok(())
    }

    async fn last_applied_state(
        &mut self,
    ) -> StoreResult<(Option<LogId<NodeId>>, StoredMembership<NodeId, Node>)> {
        let inner = self.lock();
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply_to_state_machine(
        &mut self,
        entries: &[Entry<TypeConfig>],
    ) -> StoreResult<Vec<Reply>> {
        let mut inner = self.lock();
        let mut replies = Vec::with_capacity(entries.len());
        for entry in entries {
            inner.last_applied = Some(entry.log_id);
            match &entry.payload {
                EntryPayload::Blank => replies.push(Reply::default()),
                EntryPayload::Normal(command) => {
                    let reply = inner.replicas.apply(command);
                    tracing::debug!("applied {} {command:?}: {reply:?}", entry.log_id);
                    replies.push(reply);
                }
                EntryPayload::Membership(m) => {
                    inner.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                    replies.push(Reply::default());
                }
            }
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> StoreResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StoreResult<()> {
        let data = snapshot.into_inner();
        tracing::info!(
            "installing a snapshot at {:?} from the leader",
            meta.last_log_id
        );
        let replicas: ReplicasInfo = serde_json::from_slice(&data).map_err(io_err)?;
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data,
        };
        let bytes = serde_json::to_vec(&stored).map_err(io_err)?;
        let mut inner = self.lock();
        write_atomic(&inner.dir, "snapshot.json", &bytes).map_err(io_err)?;
        inner.replicas = replicas;
        inner.last_applied = meta.last_log_id;
        inner.membership = meta.last_membership.clone();
        inner.snapshot = Some(stored);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> StoreResult<Option<Snapshot<TypeConfig>>> {
        Ok(self.lock().snapshot.as_ref().map(|s| Snapshot {
            meta: s.meta.clone(),
            snapshot: Box::new(Cursor::new(s.data.clone())),
        }))
    }
}
