//! Delayed messages: records with a DELAY level wait in `SCHEDULE_TOPIC_XXXX` (queue level-1, on the
//! shard owning that queue) and are put to their real topic and queue when due. Each shard runs one
//! delivery task per level it owns (`delivery`); progress per level is kept here, persisted by the
//! broker's first shard to `config/delayOffset.json` (`offsets`) and read back at start. When every
//! shard is a broker of its own, each owns every level and keeps `config/delayOffset-<shard>.json`.
//!
//! Per level three offsets matter: `next` (the next unit to read), and `safe` (every unit before it has
//! been delivered AND the delivered copy is flushed on its shard). Only `safe` is persisted and
//! reported, so a crash can repeat a delivery (at-least-once) but never lose one.

pub mod delivery;
pub mod offsets;
pub mod park;
pub mod state;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::shard::mesh::{join_all, MeshError};
use crate::shard::Shard;

pub use park::{park_delayed, park_if_delayed, reply_queue_id};
use state::LevelState;

/// How often shard 0 writes the table when it changed (RocketMQ's flushDelayOffsetInterval is 10 s;
/// shorter here keeps the repeat window after a crash small).
const PERSIST_INTERVAL: Duration = Duration::from_millis(500);
/// Share of the delivery task queue (the default queue has 1000).
const DELIVERY_SHARES: usize = 4000;
/// How long a ready delivery may wait before the executor preempts other queues for it.
const DELIVERY_LATENCY: Duration = Duration::from_millis(5);
/// Longest the drain phase waits for deliveries in flight.
const QUIESCE_LIMIT: Duration = Duration::from_secs(10);

/// The levels (1-based) whose schedule queue this shard owns.
fn owned_levels(shard: &Shard) -> Vec<i32> {
    let count = i32::try_from(max_level(shard)).unwrap_or(0);
    (1..=count)
        .filter(|level| shard.owner_of(crate::state::topics::SCHEDULE_TOPIC, level - 1) == shard.id)
        .collect()
}

/// Whether this shard writes its broker's delay offsets (the first shard of the broker).
fn keeps_the_file(shard: &Shard) -> bool {
    shard.is_broker || shard.id == 0
}

fn file_of(shard: &Shard) -> std::path::PathBuf {
    offsets::path(
        &shard.cfg.store_path_root_dir,
        shard.is_broker.then_some(shard.id),
    )
}

/// The number of configured delay levels (the clamp for DELAY), parsed once per shard.
pub fn max_level(shard: &Shard) -> usize {
    if let Some(n) = crate::feature::schedule::state::schedule(shard)
        .max_level
        .get()
    {
        return n;
    }
    let n = shard.cfg.delay_levels_ms().map_or(0, |l| l.len());
    crate::feature::schedule::state::schedule(shard)
        .max_level
        .set(Some(n));
    n
}

/// Loads this shard's levels from `delayOffset.json` and, on a master, starts a delivery task per owned
/// level; shard 0 also starts the periodic persistence. Call once per shard after it is serving.
pub fn start(shard: &Rc<Shard>) {
    let path = file_of(shard);
    let table = offsets::load(&path).unwrap_or_else(|e| {
        // Starting from 0 repeats deliveries (duplicates), it loses none.
        tracing::error!("cannot read delay offsets ({e}); delivering every level from its start");
        BTreeMap::new()
    });
    let levels = owned_levels(shard);
    {
        let schedule = crate::feature::schedule::state::schedule(shard);
        let mut state = schedule.levels.borrow_mut();
        for level in &levels {
            let offset = table.get(level).copied().unwrap_or(0);
            state.insert(
                *level,
                LevelState {
                    next: offset,
                    safe: offset,
                    pending: VecDeque::new(),
                },
            );
        }
    }
    if keeps_the_file(shard) {
        *crate::feature::schedule::state::schedule(shard)
            .written
            .borrow_mut() = Some(table);
        let s = shard.clone();
        glommio::spawn_local(async move {
            loop {
                glommio::timer::sleep(PERSIST_INTERVAL).await;
                if s.shutting_down.get() {
                    return;
                }
                persist(&s, false).await;
            }
        })
        .detach();
    }
    if shard.role() != crate::config::BrokerRole::Slave {
        start_deliveries(shard);
    }
}

/// Starts the delivery task of every level this shard owns (a master's; also when a slave becomes
/// master in controller mode).
pub fn start_deliveries(shard: &Rc<Shard>) {
    let levels = owned_levels(shard);
    // Deliveries run in their own latency-sensitive queue with a large share, so a due message is not
    // stuck behind the request tasks of a saturated shard.
    let tq = glommio::executor().create_task_queue(
        glommio::Shares::Static(DELIVERY_SHARES),
        glommio::Latency::Matters(DELIVERY_LATENCY),
        "delay-delivery",
    );
    for level in levels {
        match glommio::spawn_local_into(delivery::run_level(shard.clone(), level), tq) {
            Ok(task) => {
                task.detach();
            }
            Err(e) => {
                tracing::warn!(
                    "delay level {level}: no delivery task queue ({e}); using the default"
                );
                glommio::spawn_local(delivery::run_level(shard.clone(), level)).detach();
            }
        }
    }
}

/// Drain phase: stops the delivery tasks and waits (bounded) for deliveries in flight, so no put
/// reaches a store after it shut down.
pub async fn quiesce(shard: &Shard) {
    crate::feature::schedule::state::schedule(shard)
        .stopping
        .set(true);
    crate::feature::long_poll::waiters(shard).wake_all();
    let start = Instant::now();
    while crate::feature::schedule::state::schedule(shard).busy.get() > 0
        && start.elapsed() < QUIESCE_LIMIT
    {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
}

/// On each shard, for `gather` and `install_delay_offsets_json`: applies installed offsets of owned levels, moves `safe` over the
/// deliveries now flushed (all of them with `settle_all`, once every store has shut down), and answers
/// the safe table of the owned levels.
pub async fn serve_call(
    shard: &Shard,
    install: Vec<(i32, i64)>,
    settle_all: bool,
) -> Vec<(i32, i64)> {
    {
        let schedule = crate::feature::schedule::state::schedule(shard);
        let mut levels = schedule.levels.borrow_mut();
        for (level, offset) in install {
            if let Some(l) = levels.get_mut(&level) {
                l.next = offset;
                l.safe = offset;
                l.pending.clear();
            }
        }
    }
    settle(shard, settle_all).await;
    crate::feature::schedule::state::schedule(shard).safe_table()
}

/// `serve_call` on every shard of this shard's broker, in shard order.
async fn on_broker_shards(
    shard: &Shard,
    install: Vec<(i32, i64)>,
    settle_all: bool,
) -> Vec<Result<Vec<(i32, i64)>, MeshError>> {
    join_all(shard.broker_shards(shard.id).map(|s| {
        let install = install.clone();
        s.delay_offsets(install, settle_all)
    }))
    .await
}

/// Moves `safe` past deliveries whose copies are flushed.
async fn settle(shard: &Shard, all: bool) {
    let targets: Vec<usize> = {
        let schedule = crate::feature::schedule::state::schedule(shard);
        let levels = schedule.levels.borrow();
        let mut t: Vec<usize> = levels
            .values()
            .flat_map(|l| l.pending.iter())
            .flat_map(|p| p.flush_marks.iter().map(|(s, _)| *s))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    let mut flushed: HashMap<usize, i64> = HashMap::new();
    if !all {
        for target in targets {
            if let Ok(stats) = shard.on(target).stats().await {
                flushed.insert(target, stats.commit_log_flushed_offset);
            }
        }
    }
    let schedule = crate::feature::schedule::state::schedule(shard);
    let mut levels = schedule.levels.borrow_mut();
    for l in levels.values_mut() {
        while let Some(p) = l.pending.front() {
            let done = all
                || p.flush_marks
                    .iter()
                    .all(|(s, end)| flushed.get(s).is_some_and(|f| f >= end));
            if !done {
                break;
            }
            l.safe = p.next;
            l.pending.pop_front();
        }
    }
}

/// The broker's whole table: each of its shards' safe offsets of the levels it owns.
pub async fn gather(shard: &Shard, settle_all: bool) -> Result<BTreeMap<i32, i64>, String> {
    let mut table = BTreeMap::new();
    for answer in on_broker_shards(shard, Vec::new(), settle_all).await {
        table.extend(answer.map_err(|e| e.to_string())?);
    }
    Ok(table)
}

/// The broker's first shard: writes its delay offsets file if the table changed. `settle_all` once
/// every store has shut down.
pub async fn persist(shard: &Shard, settle_all: bool) {
    if !keeps_the_file(shard) {
        return;
    }
    let lock = crate::feature::schedule::state::schedule(shard).persist_lock();
    let Ok(_permit) = lock.acquire_permit(1).await else {
        return;
    };
    let table = match gather(shard, settle_all).await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("delay offsets not persisted: {e}");
            return;
        }
    };
    if crate::feature::schedule::state::schedule(shard)
        .written
        .borrow()
        .as_ref()
        == Some(&table)
    {
        return;
    }
    let path = file_of(shard);
    match crate::state::persist::write_atomic_off_thread(path.clone(), offsets::encode(&table))
        .await
    {
        Ok(()) => {
            *crate::feature::schedule::state::schedule(shard)
                .written
                .borrow_mut() = Some(table)
        }
        Err(e) => tracing::error!("cannot persist {}: {e}", path.display()),
    }
}

/// The table as GET_ALL_DELAY_OFFSET answers it (RocketMQ's `DelayOffsetSerializeWrapper`).
pub async fn delay_offsets_json(shard: &Shard) -> Result<Vec<u8>, String> {
    gather(shard, false).await.map(|t| offsets::encode(&t))
}

/// For a slave's HA sync: installs a table received from the master (RocketMQ's delayOffset.json /
/// GET_ALL_DELAY_OFFSET body) on every shard of this shard's broker, and writes the file at once (run
/// it on the broker's first shard). Levels this broker does not configure are
/// ignored. Returns the number of levels in the received table.
pub async fn install_delay_offsets_json(shard: &Shard, json: &str) -> Result<usize, String> {
    let table = offsets::parse(json.as_bytes())?;
    let entries: Vec<(i32, i64)> = table.into_iter().collect();
    let count = entries.len();
    for answer in on_broker_shards(shard, entries, false).await {
        answer.map_err(|e| e.to_string())?;
    }
    persist(shard, false).await;
    Ok(count)
}
