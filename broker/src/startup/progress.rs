//! Start-up progress: every executor records the stage of the start it is in and logs how long each
//! stage took; a watchdog thread (outside the executors, so it runs even when one is wedged) names
//! every executor that is not serving after 5 s (then after 15, 35, 75 s, ..., at most a minute
//! apart), with its stage, for how long, and what its thread is doing (scheduler state and current
//! system call), so a start-up that hangs says where.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// First watchdog report; the wait doubles after each report, up to `SLOW_START_MAX` (a long
/// recovery reports now and then, not every few seconds).
const SLOW_START: Duration = Duration::from_secs(5);
const SLOW_START_MAX: Duration = Duration::from_secs(60);

/// The stages of a shard's start, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// The executor thread has not reached the broker's code yet.
    NotRunning = 0,
    JoiningMesh,
    OpeningStore,
    LoadingState,
    Transactions,
    PopRevive,
    Listening,
    /// Shard 0: waiting for every shard to answer over the mesh.
    WaitingForShards,
    /// Shard 0: the first registration with the name servers.
    Registering,
    Serving,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::NotRunning => "executor start",
            Stage::JoiningMesh => "joining the shard mesh",
            Stage::OpeningStore => "opening the store (recovery)",
            Stage::LoadingState => "loading consumer offsets",
            Stage::Transactions => "reading the transaction op queue",
            Stage::PopRevive => "replaying the POP revive log",
            Stage::Listening => "binding listeners and starting tasks",
            Stage::WaitingForShards => "waiting for every shard to answer",
            Stage::Registering => "registering with the name servers",
            Stage::Serving => "serving",
        }
    }

    fn from_u8(v: u8) -> Stage {
        [
            Stage::NotRunning,
            Stage::JoiningMesh,
            Stage::OpeningStore,
            Stage::LoadingState,
            Stage::Transactions,
            Stage::PopRevive,
            Stage::Listening,
            Stage::WaitingForShards,
            Stage::Registering,
            Stage::Serving,
        ]
        .get(usize::from(v))
        .copied()
        .unwrap_or(Stage::NotRunning)
    }
}

/// One executor's progress; the shard id is known only once it joined the mesh.
#[derive(Default)]
struct Slot {
    stage: AtomicU8,
    /// Milliseconds since the start when the stage began.
    since_ms: AtomicU64,
    /// Kernel thread id (0 until the executor runs).
    tid: AtomicI64,
    /// Shard id + 1 (0 until known).
    shard: AtomicUsize,
}

/// Shared by the executors (one slot each, taken in the order they start) and the watchdog.
pub struct StartupProgress {
    start: Instant,
    slots: Vec<Slot>,
    claimed: AtomicUsize,
    done: AtomicBool,
}

/// One executor's handle on its slot.
pub struct ShardProgress {
    all: Arc<StartupProgress>,
    slot: usize,
}

impl StartupProgress {
    pub fn new(shards: usize) -> Arc<StartupProgress> {
        Arc::new(StartupProgress {
            start: Instant::now(),
            slots: (0..shards).map(|_| Slot::default()).collect(),
            claimed: AtomicUsize::new(0),
            done: AtomicBool::new(false),
        })
    }

    fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Called first thing on each executor thread.
    pub fn claim(self: &Arc<Self>) -> ShardProgress {
        let slot = self.claimed.fetch_add(1, Ordering::AcqRel);
        let p = ShardProgress {
            all: self.clone(),
            slot,
        };
        if let Some(s) = self.slots.get(slot) {
            s.tid.store(thread_id(), Ordering::Release);
        }
        p.enter(Stage::JoiningMesh);
        p
    }

    /// Starts the watchdog thread; it ends once [`ShardProgress::broker_serving`] was called.
    pub fn watch(self: &Arc<Self>) {
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("startup-watchdog".into())
            .spawn(move || {
                let mut wait = SLOW_START;
                let mut next = SLOW_START;
                while !me.done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(100));
                    if me.start.elapsed() >= next && !me.done.load(Ordering::Acquire) {
                        me.report();
                        wait = (wait * 2).min(SLOW_START_MAX);
                        next += wait;
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the start-up watchdog: {e}");
        }
    }

    /// Logs every executor that does not serve yet.
    fn report(&self) {
        let now = self.elapsed_ms();
        let claimed = self.claimed.load(Ordering::Acquire).min(self.slots.len());
        tracing::warn!(
            "start-up slow: {:.1} s since the start, {claimed} of {} executors running",
            now as f64 / 1000.0,
            self.slots.len()
        );
        for (i, s) in self.slots.iter().enumerate().take(claimed) {
            let stage = Stage::from_u8(s.stage.load(Ordering::Acquire));
            if stage == Stage::Serving {
                continue;
            }
            let shard = match s.shard.load(Ordering::Acquire) {
                0 => format!("executor {i} (shard not known yet)"),
                n => format!("shard {}", n - 1),
            };
            let tid = s.tid.load(Ordering::Acquire);
            tracing::warn!(
                "start-up slow: {shard} in `{}` for {:.1} s (thread {tid}: {})",
                stage.name(),
                now.saturating_sub(s.since_ms.load(Ordering::Acquire)) as f64 / 1000.0,
                thread_state(tid)
            );
        }
    }
}

impl ShardProgress {
    /// Records the shard id once the mesh gave it.
    pub fn set_shard(&self, shard: usize) {
        if let Some(s) = self.all.slots.get(self.slot) {
            s.shard.store(shard + 1, Ordering::Release);
        }
    }

    /// Enters `stage`, logging how long the previous one took.
    pub fn enter(&self, stage: Stage) {
        let Some(s) = self.all.slots.get(self.slot) else {
            return;
        };
        let now = self.all.elapsed_ms();
        let prev = Stage::from_u8(s.stage.swap(stage as u8, Ordering::AcqRel));
        let since = s.since_ms.swap(now, Ordering::AcqRel);
        let who = match s.shard.load(Ordering::Acquire) {
            0 => format!("executor {}", self.slot),
            n => format!("shard {}", n - 1),
        };
        tracing::info!(
            "{who} start-up: {} took {} ms (at {now} ms); now {}",
            prev.name(),
            now.saturating_sub(since),
            stage.name()
        );
    }

    /// Shard 0, once the broker serves: stops the watchdog.
    pub fn broker_serving(&self) {
        self.all.done.store(true, Ordering::Release);
    }
}

fn thread_id() -> i64 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

/// `state R|S|D..., syscall N` of a thread of this process, from /proc (best effort).
fn thread_state(tid: i64) -> String {
    if tid == 0 {
        return "not started".to_owned();
    }
    let dir = format!("/proc/self/task/{tid}");
    let state = std::fs::read_to_string(format!("{dir}/stat"))
        .ok()
        .and_then(|s| {
            // The state follows the command name, which is in parentheses and may hold spaces.
            let rest = s.rsplit_once(')')?.1;
            rest.split_whitespace().next().map(str::to_owned)
        })
        .unwrap_or_else(|| "?".to_owned());
    let syscall = std::fs::read_to_string(format!("{dir}/syscall"))
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned());
    let wchan = std::fs::read_to_string(format!("{dir}/wchan")).unwrap_or_default();
    format!("state {state}, syscall {syscall}, wchan {}", wchan.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_round_trip_and_the_own_thread_is_described() {
        for v in 0..=8u8 {
            assert_eq!(Stage::from_u8(v) as u8, v);
        }
        assert_eq!(Stage::from_u8(200), Stage::NotRunning);
        let progress = StartupProgress::new(1);
        let p = progress.claim();
        p.set_shard(0);
        p.enter(Stage::OpeningStore);
        let slot = &progress.slots[0];
        assert_eq!(
            slot.stage.load(Ordering::Acquire),
            Stage::OpeningStore as u8
        );
        let state = thread_state(slot.tid.load(Ordering::Acquire));
        // This very thread is running while it reads its own state.
        assert!(state.starts_with("state R"), "{state}");
    }

    #[test]
    fn a_stuck_executor_is_reported_with_its_sleeping_thread() {
        let progress = StartupProgress::new(2);
        let (tx, rx) = std::sync::mpsc::channel();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let stuck = {
            let progress = progress.clone();
            std::thread::spawn(move || {
                let p = progress.claim();
                p.set_shard(1);
                tx.send(()).unwrap();
                // Blocked, as an executor waiting for a peer that never comes.
                let _ = wait.recv();
            })
        };
        rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let slot = &progress.slots[0];
        assert_eq!(slot.shard.load(Ordering::Acquire), 2);
        let state = thread_state(slot.tid.load(Ordering::Acquire));
        assert!(state.starts_with("state S"), "{state}");
        // Logs (no subscriber here) without panicking, with one executor never started.
        progress.report();
        release.send(()).unwrap();
        stuck.join().unwrap();
    }
}
