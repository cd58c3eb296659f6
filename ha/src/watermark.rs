//! The master side's view of its slaves for one shard: each connected slave's acknowledged offset, and
//! SYNC_MASTER waiters released in groups (one ack releases every waiter at or below it).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Why a SYNC_MASTER wait did not end with an ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    /// No slave connected, or the best one lags more than the allowed gap (SLAVE_NOT_AVAILABLE).
    SlaveNotAvailable,
    /// No ack covered the offset in time (FLUSH_SLAVE_TIMEOUT).
    Timeout,
}

#[derive(Debug, Clone, Copy)]
struct Slave {
    acked: i64,
    last_report: Instant,
    /// When the slave last held everything the master had (for the lag in seconds).
    caught_up_at: Instant,
}

#[derive(Default)]
struct State {
    slaves: HashMap<u64, Slave>,
    waiters: BTreeMap<(i64, u64), Waker>,
    next_waiter: u64,
    next_conn: u64,
}

/// A snapshot for runtime info and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    pub slaves: usize,
    /// Highest offset any slave acknowledged (-1 when none is connected).
    pub slave_ack_offset: i64,
    /// Milliseconds since the best slave last held all the master's data (0 when in sync or none).
    pub behind_ms: u64,
}

/// One shard's replication watermark. `Rc` inside; clone within the shard's executor.
#[derive(Clone, Default)]
pub struct Watermark {
    state: Rc<RefCell<State>>,
}

impl Watermark {
    pub fn new() -> Watermark {
        Watermark::default()
    }

    /// A slave connected; returns its id for `ack` and `disconnected`.
    pub fn connected(&self, offset: i64) -> u64 {
        let mut st = self.state.borrow_mut();
        st.next_conn += 1;
        let id = st.next_conn;
        let now = Instant::now();
        st.slaves.insert(
            id,
            Slave {
                acked: offset,
                last_report: now,
                caught_up_at: now,
            },
        );
        id
    }

    pub fn disconnected(&self, id: u64) {
        let wakers: Vec<Waker> = {
            let mut st = self.state.borrow_mut();
            st.slaves.remove(&id);
            if st.slaves.is_empty() {
                // Waiters must learn at once that nobody will ack.
                std::mem::take(&mut st.waiters).into_values().collect()
            } else {
                Vec::new()
            }
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// A slave reports holding everything below `offset`; `master_end` is the master's log end now.
    pub fn ack(&self, id: u64, offset: i64, master_end: i64) {
        let wakers: Vec<Waker> = {
            let mut st = self.state.borrow_mut();
            let now = Instant::now();
            if let Some(s) = st.slaves.get_mut(&id) {
                s.acked = s.acked.max(offset);
                s.last_report = now;
                if s.acked >= master_end {
                    s.caught_up_at = now;
                }
            }
            let best = st.slaves.values().map(|s| s.acked).max().unwrap_or(-1);
            // Everything at or below the best ack is released in one go.
            let rest = st.waiters.split_off(&(best, u64::MAX));
            std::mem::replace(&mut st.waiters, rest)
                .into_values()
                .collect()
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The best slave's acknowledged offset, or -1 when no slave is connected.
    pub fn acked(&self) -> i64 {
        let st = self.state.borrow();
        st.slaves.values().map(|s| s.acked).max().unwrap_or(-1)
    }

    pub fn lag(&self) -> Lag {
        let st = self.state.borrow();
        let best = st.slaves.values().max_by_key(|s| s.acked);
        Lag {
            slaves: st.slaves.len(),
            slave_ack_offset: best.map_or(-1, |s| s.acked),
            behind_ms: best.map_or(0, |s| {
                u64::try_from(
                    s.last_report
                        .saturating_duration_since(s.caught_up_at)
                        .as_millis(),
                )
                .unwrap_or(u64::MAX)
            }),
        }
    }

    /// Whether a slave can be waited for: one is connected and lags at most `max_gap` bytes behind
    /// `master_end` (RocketMQ's isSlaveOK).
    pub fn slave_ok(&self, master_end: i64, max_gap: u64) -> bool {
        let acked = self.acked();
        acked >= 0 && master_end.saturating_sub(acked) <= i64::try_from(max_gap).unwrap_or(i64::MAX)
    }

    /// Waits until a slave acknowledged `offset` (everything below it), for at most `timeout`.
    /// Answers SlaveNotAvailable at once when no slave is fit to wait for.
    pub async fn wait(
        &self,
        offset: i64,
        master_end: i64,
        max_gap: u64,
        timeout: Duration,
    ) -> Result<(), WaitError> {
        if !self.slave_ok(master_end, max_gap) {
            return Err(WaitError::SlaveNotAvailable);
        }
        let id = {
            let mut st = self.state.borrow_mut();
            st.next_waiter += 1;
            st.next_waiter
        };
        let waiting = AckWait {
            wm: self.clone(),
            offset,
            id,
        };
        let timer = async {
            glommio::timer::sleep(timeout).await;
            Err(WaitError::Timeout)
        };
        futures_lite::future::or(waiting, timer).await
    }

    #[cfg(test)]
    fn waiter_count(&self) -> usize {
        self.state.borrow().waiters.len()
    }
}

struct AckWait {
    wm: Watermark,
    offset: i64,
    id: u64,
}

impl Future for AckWait {
    type Output = Result<(), WaitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self.wm.state.borrow_mut();
        if st.slaves.is_empty() {
            st.waiters.remove(&(self.offset, self.id));
            return Poll::Ready(Err(WaitError::SlaveNotAvailable));
        }
        let best = st.slaves.values().map(|s| s.acked).max().unwrap_or(-1);
        if best >= self.offset {
            st.waiters.remove(&(self.offset, self.id));
            return Poll::Ready(Ok(()));
        }
        st.waiters
            .insert((self.offset, self.id), cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for AckWait {
    fn drop(&mut self) {
        if let Ok(mut st) = self.wm.state.try_borrow_mut() {
            st.waiters.remove(&(self.offset, self.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::LocalExecutorBuilder;

    fn run<T, F>(make: impl FnOnce() -> F + Send + 'static) -> T
    where
        T: Send + 'static,
        F: Future<Output = T> + 'static,
    {
        LocalExecutorBuilder::default()
            .spawn(make)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn no_slave_is_not_available_at_once() {
        run(|| async {
            let wm = Watermark::new();
            let start = Instant::now();
            let r = wm.wait(100, 100, 1 << 20, Duration::from_secs(5)).await;
            assert_eq!(r, Err(WaitError::SlaveNotAvailable));
            assert!(start.elapsed() < Duration::from_secs(1));
        });
    }

    #[test]
    fn lagging_slave_is_not_available() {
        run(|| async {
            let wm = Watermark::new();
            let _id = wm.connected(0);
            let r = wm.wait(5000, 5000, 1000, Duration::from_secs(5)).await;
            assert_eq!(r, Err(WaitError::SlaveNotAvailable));
            assert!(wm.slave_ok(5000, 5000));
        });
    }

    #[test]
    fn one_ack_releases_every_waiter_at_or_below_it() {
        run(|| async {
            let wm = Watermark::new();
            let id = wm.connected(0);
            let mut tasks = Vec::new();
            for off in [100i64, 200, 300, 400] {
                let w = wm.clone();
                tasks.push(glommio::spawn_local(async move {
                    w.wait(off, 0, 1 << 20, Duration::from_secs(2)).await
                }));
            }
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(wm.waiter_count(), 4);
            wm.ack(id, 300, 400);
            glommio::timer::sleep(Duration::from_millis(20)).await;
            // 100, 200 and 300 released by the one ack; 400 still waits.
            assert_eq!(wm.waiter_count(), 1);
            let start = Instant::now();
            let mut results = Vec::new();
            for t in tasks.drain(..3) {
                results.push(t.await);
            }
            assert!(start.elapsed() < Duration::from_millis(500));
            assert_eq!(results, vec![Ok(()), Ok(()), Ok(())]);
            let last = tasks.pop().unwrap().await;
            assert_eq!(last, Err(WaitError::Timeout));
            assert_eq!(wm.waiter_count(), 0);
        });
    }

    #[test]
    fn waiters_fail_when_last_slave_leaves() {
        run(|| async {
            let wm = Watermark::new();
            let id = wm.connected(0);
            let w = wm.clone();
            let t = glommio::spawn_local(async move {
                w.wait(50, 0, 1 << 20, Duration::from_secs(10)).await
            });
            glommio::timer::sleep(Duration::from_millis(20)).await;
            let start = Instant::now();
            wm.disconnected(id);
            assert_eq!(t.await, Err(WaitError::SlaveNotAvailable));
            assert!(start.elapsed() < Duration::from_secs(1));
        });
    }

    #[test]
    fn lag_tracks_the_best_slave() {
        run(|| async {
            let wm = Watermark::new();
            assert_eq!(wm.lag().slave_ack_offset, -1);
            let a = wm.connected(10);
            let b = wm.connected(0);
            wm.ack(b, 500, 1000);
            assert_eq!(wm.acked(), 500);
            wm.ack(a, 1000, 1000);
            let lag = wm.lag();
            assert_eq!(
                (lag.slaves, lag.slave_ack_offset, lag.behind_ms),
                (2, 1000, 0)
            );
        });
    }
}
