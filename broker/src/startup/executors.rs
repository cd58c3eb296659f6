//! The shard executors: one glommio executor thread per shard, pinned to its own CPU among those the
//! process may use. Any executor that cannot start (a thread or an io_uring ring refused on a loaded
//! machine, a CPU outside the process's cpuset) or that ends with a panic stops the broker at once
//! with that reason. glommio's own pool leaves the failed thread's error unread until every thread
//! is joined, while the others wait forever in the shard mesh join for the executor that never
//! came: a broker that logged only its first line and hung.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use glommio::{CpuSet, LocalExecutorBuilder, Placement, PoolPlacement};

use crate::error::BrokerError;

/// How an executor thread ended.
enum Ended {
    /// Its future returned (graceful shutdown).
    Done,
    /// The executor could not be built.
    NotStarted(String),
    /// It panicked (the default hook already printed where).
    Panicked,
}

/// Sends how its thread ended when dropped, so a panic reports too.
struct EndReport {
    index: usize,
    ended: Option<Ended>,
    tx: mpsc::Sender<(usize, Ended)>,
}

impl Drop for EndReport {
    fn drop(&mut self) {
        let ended = self.ended.take().unwrap_or(Ended::Panicked);
        let _ = self.tx.send((self.index, ended));
    }
}

/// The CPUs this process may run on (its affinity mask, which a cpuset or `taskset` narrows), in
/// order; empty if unknown.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into the zeroed local
    // set; CPU_ISSET only reads it, for indexes below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// One CPU per shard among those the process may use, packed as glommio's `MaxPack` packs them
/// (hyper-thread siblings, then cores of one package and NUMA node); empty (executors unpinned)
/// when there are fewer usable CPUs than shards.
fn shard_cpus(shards: usize) -> Vec<usize> {
    let allowed = allowed_cpus();
    if shards > allowed.len() {
        tracing::warn!(
            "{shards} shards on {} usable CPUs ({allowed:?}): executors are not pinned",
            allowed.len()
        );
        return Vec::new();
    }
    let packed = CpuSet::online()
        .map(|online| online.filter(|l| allowed.contains(&l.cpu)))
        .and_then(|usable| PoolPlacement::MaxPack(shards, Some(usable)).generate_cpu_set());
    match packed {
        Ok(mut gen) => (0..shards)
            .filter_map(|_| gen.next().cpu_binding()?.into_iter().next())
            .collect(),
        // No topology (e.g. no /sys): the usable CPUs in order.
        Err(_) => allowed.into_iter().take(shards).collect(),
    }
}

/// Runs `shard_future(i)` on executor `i` for every `i < shards` and returns once all ended; an
/// executor that fails to start or panics makes the process exit with status 1 after logging why.
pub fn run_executors<G, F>(
    shards: usize,
    spin_before_park: Option<Duration>,
    shard_future: G,
) -> Result<(), BrokerError>
where
    G: FnOnce(usize) -> F + Clone + Send + 'static,
    F: Future<Output = ()> + 'static,
{
    let cpus = shard_cpus(shards);
    let pinned = cpus.len() == shards;
    let (tx, rx) = mpsc::channel();
    for index in 0..shards {
        let placement = match cpus.get(index) {
            Some(&cpu) if pinned => Placement::Fixed(cpu),
            _ => Placement::Unbound,
        };
        // glommio only spins on executors pinned to a CPU.
        let spin = spin_before_park.filter(|_| pinned);
        let make = shard_future.clone();
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("shard-exec-{index}"))
            .spawn(move || {
                let mut report = EndReport {
                    index,
                    ended: None,
                    tx,
                };
                let mut builder =
                    LocalExecutorBuilder::new(placement).name(&format!("shard-exec-{index}"));
                if let Some(spin) = spin {
                    builder = builder.spin_before_park(spin);
                }
                match builder.make() {
                    Ok(ex) => {
                        ex.run(make(index));
                        report.ended = Some(Ended::Done);
                    }
                    Err(e) => report.ended = Some(Ended::NotStarted(e.to_string())),
                }
            })
            .map_err(|e| BrokerError::Executor(format!("cannot start executor {index}: {e}")))?;
    }
    drop(tx);
    for _ in 0..shards {
        let Ok((index, ended)) = rx.recv() else {
            break;
        };
        let why = match ended {
            Ended::Done => continue,
            Ended::NotStarted(e) => format!("executor {index} could not start: {e}"),
            Ended::Panicked => format!("executor {index} panicked"),
        };
        // The other executors cannot serve without it (and would wait for it forever at start).
        tracing::error!("{why}; stopping the broker");
        eprintln!("broker: {why}");
        std::process::exit(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_thread_may_run_somewhere() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        // SAFETY: sched_getcpu takes no arguments.
        let now = unsafe { libc::sched_getcpu() };
        assert!(cpus.contains(&(now as usize)), "{now} not in {cpus:?}");
    }

    #[test]
    fn shards_get_distinct_usable_cpus_or_none() {
        let allowed = allowed_cpus();
        let cpus = shard_cpus(allowed.len());
        assert_eq!(cpus.len(), allowed.len());
        let mut sorted = cpus.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, allowed);
        assert!(shard_cpus(allowed.len() + 1).is_empty());
    }

    #[test]
    fn every_executor_runs_its_future_and_the_call_returns() {
        let (tx, rx) = mpsc::channel();
        run_executors(2, None, move |i| {
            let tx = tx.clone();
            async move {
                glommio::timer::sleep(Duration::from_millis(10)).await;
                tx.send(i).unwrap();
            }
        })
        .unwrap();
        let mut ran: Vec<usize> = rx.try_iter().collect();
        ran.sort_unstable();
        assert_eq!(ran, vec![0, 1]);
    }
}
