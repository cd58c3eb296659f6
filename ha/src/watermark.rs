//! The master side's view of its slaves for one shard: each connected slave's acknowledged offset,
//! broker id (controller mode) and when it was last caught up, and SYNC_MASTER waiters released in
//! groups (one ack releases every waiter at or below it): `wait` needs any one slave, `wait_all` every
//! slave of a given set of broker ids (controller mode's allAckInSyncStateSet).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
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

#[derive(Debug, Clone)]
struct Slave {
    /// Controller broker id (`wire::NO_BROKER_ID` for a classic slave).
    broker_id: i64,
    acked: i64,
    last_report: Instant,
    connected_at: Instant,
    /// When the slave last held everything the master had (RocketMQ's lastCaughtUpTime): the latest
    /// time whose master log end the slave's acks have reached since. None: not yet.
    caught_up_at: Option<Instant>,
    /// The master's log end at earlier acks, and when, oldest first, each above the slave's ack:
    /// an ack reaching one means the slave was caught up as of then. Under a steady stream of puts
    /// the master's end is always a little ahead of any ack, and only such past ends are reached.
    marks: VecDeque<(i64, Instant)>,
    /// The slave's address (`ip:port`), when the master side said it.
    addr: Option<String>,
    /// Where its stream started (the offset of the first byte sent).
    transfer_from: i64,
    /// Bytes sent to it per second.
    rate: std::rc::Rc<crate::rate::ByteRate>,
}

/// At most this many past master ends are kept per slave: beyond, new ones are not noted until the
/// slave reaches the oldest (its catch-up time is then coarser, never later than the truth).
const MAX_MARKS: usize = 256;

impl Slave {
    /// Records the master's log end `master_end` at `now`, after the slave's ack: the latest past end
    /// its ack reached gives its catch-up time.
    fn note_end(&mut self, master_end: i64, now: Instant) {
        if self.acked >= master_end {
            self.caught_up_at = Some(now);
            self.marks.clear();
            return;
        }
        while let Some((end, at)) = self.marks.front().copied() {
            if end > self.acked {
                break;
            }
            self.caught_up_at = self.caught_up_at.max(Some(at));
            self.marks.pop_front();
        }
        let higher = self.marks.back().is_none_or(|(end, _)| *end < master_end);
        if higher && self.marks.len() < MAX_MARKS {
            self.marks.push_back((master_end, now));
        }
    }
}

#[derive(Default)]
struct State {
    slaves: HashMap<u64, Slave>,
    waiters: BTreeMap<(i64, u64), Waker>,
    /// `wait_all` waiters, woken when an ack reaches their offset or a slave leaves.
    set_waiters: BTreeMap<(i64, u64), Waker>,
    next_waiter: u64,
    next_conn: u64,
}

impl State {
    /// The highest ack of any connection of `broker_id`, if one is connected.
    fn acked_by(&self, broker_id: i64) -> Option<i64> {
        self.slaves
            .values()
            .filter(|s| s.broker_id == broker_id)
            .map(|s| s.acked)
            .max()
    }
}

/// One connected slave, for the broker (SyncStateSet upkeep, runtime info).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaveInfo {
    /// The connection's id in this watermark.
    pub conn: u64,
    /// Controller broker id (-1 for a classic slave).
    pub broker_id: i64,
    /// Everything below this offset is on the slave.
    pub acked: i64,
    /// Time since the slave last held everything the master had (None: not since it connected).
    pub caught_up_age: Option<Duration>,
    /// Time since its last report.
    pub report_age: Duration,
}

/// What `haStatus` shows of one connected slave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaveTransfer {
    pub broker_id: i64,
    /// `ip:port` of its connection (empty when not known).
    pub addr: String,
    pub acked: i64,
    /// Where its stream started.
    pub transfer_from: i64,
    /// Bytes sent to it in the last whole second.
    pub bytes_per_second: u64,
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

/// Called after every ack (the broker moves its confirm offset there).
pub type AckHook = dyn Fn();

/// One shard's replication watermark. `Rc` inside; clone within the shard's executor.
#[derive(Clone, Default)]
pub struct Watermark {
    state: Rc<RefCell<State>>,
    on_ack: Rc<RefCell<Option<Rc<AckHook>>>>,
}

impl Watermark {
    pub fn new() -> Watermark {
        Watermark::default()
    }

    /// A slave connected (classic, no broker id); returns its id for `ack` and `disconnected`.
    pub fn connected(&self, offset: i64) -> u64 {
        self.connected_as(offset, crate::wire::NO_BROKER_ID)
    }

    /// A slave with controller broker id `broker_id` connected, holding everything below `offset`.
    pub fn connected_as(&self, offset: i64, broker_id: i64) -> u64 {
        let mut st = self.state.borrow_mut();
        st.next_conn += 1;
        let id = st.next_conn;
        let now = Instant::now();
        st.slaves.insert(
            id,
            Slave {
                broker_id,
                acked: offset,
                last_report: now,
                connected_at: now,
                caught_up_at: None,
                // The master's end is not known yet.
                marks: VecDeque::new(),
                addr: None,
                transfer_from: offset,
                rate: Default::default(),
            },
        );
        id
    }

    /// Records the address of connection `id` (for `haStatus`).
    pub fn set_addr(&self, id: u64, addr: String) {
        if let Some(s) = self.state.borrow_mut().slaves.get_mut(&id) {
            s.addr = Some(addr);
        }
    }

    /// The byte counter of connection `id`'s stream, for its sender to count what it sends.
    pub fn rate(&self, id: u64) -> Option<std::rc::Rc<crate::rate::ByteRate>> {
        self.state.borrow().slaves.get(&id).map(|s| s.rate.clone())
    }

    /// Every connected slave as `haStatus` shows it, by connection.
    pub fn transfers(&self) -> Vec<SlaveTransfer> {
        let st = self.state.borrow();
        let mut conns: Vec<(&u64, &Slave)> = st.slaves.iter().collect();
        conns.sort_by_key(|(id, _)| **id);
        conns
            .into_iter()
            .map(|(_, s)| SlaveTransfer {
                broker_id: s.broker_id,
                addr: s.addr.clone().unwrap_or_default(),
                acked: s.acked,
                transfer_from: s.transfer_from,
                bytes_per_second: s.rate.per_second(),
            })
            .collect()
    }

    pub fn disconnected(&self, id: u64) {
        let wakers: Vec<Waker> = {
            let mut st = self.state.borrow_mut();
            st.slaves.remove(&id);
            // Set waiters check whether their slaves are still there.
            let mut w: Vec<Waker> = std::mem::take(&mut st.set_waiters).into_values().collect();
            if st.slaves.is_empty() {
                // Waiters must learn at once that nobody will ack.
                w.extend(std::mem::take(&mut st.waiters).into_values());
            }
            w
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// A slave reports holding everything below `offset`; `master_end` is the master's log end now.
    pub fn ack(&self, id: u64, offset: i64, master_end: i64) {
        let wakers: Vec<Waker> = {
            let mut st = self.state.borrow_mut();
            let now = Instant::now();
            let mut acked = -1;
            if let Some(s) = st.slaves.get_mut(&id) {
                s.acked = s.acked.max(offset);
                s.last_report = now;
                s.note_end(master_end, now);
                acked = s.acked;
            }
            let best = st.slaves.values().map(|s| s.acked).max().unwrap_or(-1);
            // Everything at or below the best ack is released in one go.
            let rest = st.waiters.split_off(&(best, u64::MAX));
            let mut w: Vec<Waker> = std::mem::replace(&mut st.waiters, rest)
                .into_values()
                .collect();
            // Set waiters at or below this slave's ack may be complete now; they re-check.
            let rest = st.set_waiters.split_off(&(acked, u64::MAX));
            w.extend(std::mem::replace(&mut st.set_waiters, rest).into_values());
            w
        };
        wakers.into_iter().for_each(Waker::wake);
        let hook = self.on_ack.borrow().clone();
        if let Some(f) = hook {
            f();
        }
    }

    /// Sets the function called after every ack.
    pub fn set_ack_hook(&self, f: Box<AckHook>) {
        *self.on_ack.borrow_mut() = Some(Rc::from(f));
    }

    /// The highest ack of a connected slave with `broker_id`; None when none is connected.
    pub fn acked_of(&self, broker_id: i64) -> Option<i64> {
        self.state.borrow().acked_by(broker_id)
    }

    /// Every connected slave, by connection.
    pub fn slaves(&self) -> Vec<SlaveInfo> {
        let st = self.state.borrow();
        let now = Instant::now();
        let mut out: Vec<SlaveInfo> = st
            .slaves
            .iter()
            .map(|(conn, s)| SlaveInfo {
                conn: *conn,
                broker_id: s.broker_id,
                acked: s.acked,
                caught_up_age: s.caught_up_at.map(|t| now.saturating_duration_since(t)),
                report_age: now.saturating_duration_since(s.last_report),
            })
            .collect();
        out.sort_by_key(|s| s.conn);
        out
    }

    /// Whether a slave with `broker_id` is connected.
    pub fn is_connected(&self, broker_id: i64) -> bool {
        self.state.borrow().acked_by(broker_id).is_some()
    }

    /// Whether a slave with `broker_id` is connected and holds everything up to `master_end` now.
    pub fn caught_up(&self, broker_id: i64, master_end: i64) -> bool {
        self.state
            .borrow()
            .acked_by(broker_id)
            .is_some_and(|a| a >= master_end)
    }

    /// Whether a slave with `broker_id` is connected and was caught up within `max_age` (or is now):
    /// RocketMQ's test for keeping a slave in the SyncStateSet (haMaxTimeSlaveNotCatchup).
    pub fn in_sync(&self, broker_id: i64, master_end: i64, max_age: Duration) -> bool {
        let st = self.state.borrow();
        let now = Instant::now();
        st.slaves.values().any(|s| {
            s.broker_id == broker_id
                && (s.acked >= master_end
                    || s.caught_up_at
                        .is_some_and(|t| now.saturating_duration_since(t) <= max_age))
        })
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
                        .saturating_duration_since(s.caught_up_at.unwrap_or(s.connected_at))
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

    /// Waits until every slave in `broker_ids` (the SyncStateSet less the master) acknowledged
    /// `offset`, for at most `timeout`. An empty set needs nobody. SlaveNotAvailable at once when one
    /// of them is not connected, and as soon as one leaves while waiting.
    pub async fn wait_all(
        &self,
        offset: i64,
        broker_ids: &[i64],
        timeout: Duration,
    ) -> Result<(), WaitError> {
        if broker_ids.is_empty() {
            return Ok(());
        }
        let id = {
            let mut st = self.state.borrow_mut();
            if broker_ids.iter().any(|b| st.acked_by(*b).is_none()) {
                return Err(WaitError::SlaveNotAvailable);
            }
            st.next_waiter += 1;
            st.next_waiter
        };
        let waiting = SetWait {
            wm: self.clone(),
            offset,
            ids: broker_ids.to_vec(),
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
        let st = self.state.borrow();
        st.waiters.len() + st.set_waiters.len()
    }
}

struct SetWait {
    wm: Watermark,
    offset: i64,
    ids: Vec<i64>,
    id: u64,
}

impl Future for SetWait {
    type Output = Result<(), WaitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self.wm.state.borrow_mut();
        let mut done = true;
        for b in &self.ids {
            match st.acked_by(*b) {
                None => {
                    st.set_waiters.remove(&(self.offset, self.id));
                    return Poll::Ready(Err(WaitError::SlaveNotAvailable));
                }
                Some(a) if a < self.offset => done = false,
                Some(_) => {}
            }
        }
        if done {
            st.set_waiters.remove(&(self.offset, self.id));
            return Poll::Ready(Ok(()));
        }
        st.set_waiters
            .insert((self.offset, self.id), cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for SetWait {
    fn drop(&mut self) {
        if let Ok(mut st) = self.wm.state.try_borrow_mut() {
            st.set_waiters.remove(&(self.offset, self.id));
        }
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
    fn wait_all_needs_every_slave_of_the_set() {
        run(|| async {
            let wm = Watermark::new();
            let a = wm.connected_as(0, 1);
            let b = wm.connected_as(0, 2);
            let _classic = wm.connected(0);
            assert!(wm.is_connected(1) && wm.is_connected(2) && !wm.is_connected(3));
            // Nobody needed: at once.
            assert_eq!(wm.wait_all(100, &[], Duration::from_secs(1)).await, Ok(()));
            // Broker 3 is not connected: not available at once.
            let start = Instant::now();
            assert_eq!(
                wm.wait_all(100, &[1, 3], Duration::from_secs(5)).await,
                Err(WaitError::SlaveNotAvailable)
            );
            assert!(start.elapsed() < Duration::from_secs(1));
            let mut tasks = Vec::new();
            for off in [100i64, 200, 300] {
                let w = wm.clone();
                tasks.push(glommio::spawn_local(async move {
                    w.wait_all(off, &[1, 2], Duration::from_secs(2)).await
                }));
            }
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(wm.waiter_count(), 3);
            // One slave far ahead releases nobody.
            wm.ack(a, 1000, 1000);
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(wm.waiter_count(), 3);
            // The other one's ack at 200 releases 100 and 200 together.
            wm.ack(b, 200, 1000);
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(wm.waiter_count(), 1);
            let mut results = Vec::new();
            for t in tasks.drain(..2) {
                results.push(t.await);
            }
            assert_eq!(results, vec![Ok(()), Ok(())]);
            // Broker 2 leaves: the last waiter fails at once, not at its timeout.
            let start = Instant::now();
            wm.disconnected(b);
            assert_eq!(
                tasks.pop().unwrap().await,
                Err(WaitError::SlaveNotAvailable)
            );
            assert!(start.elapsed() < Duration::from_secs(1));
            assert_eq!(wm.waiter_count(), 0);
            // A lone set times out when its slave never acks.
            assert_eq!(
                wm.wait_all(5000, &[1], Duration::from_millis(50)).await,
                Err(WaitError::Timeout)
            );
        });
    }

    #[test]
    fn slaves_are_listed_with_their_ids_and_catch_up_times() {
        run(|| async {
            let wm = Watermark::new();
            let a = wm.connected_as(0, 1);
            let b = wm.connected_as(0, 2);
            glommio::timer::sleep(Duration::from_millis(60)).await;
            // a reaches the master's end now; b stays behind the master's end at its previous ack.
            wm.ack(a, 500, 500);
            wm.ack(b, 100, 500);
            let list = wm.slaves();
            assert_eq!(
                list.iter()
                    .map(|s| (s.broker_id, s.acked))
                    .collect::<Vec<_>>(),
                vec![(1, 500), (2, 100)]
            );
            assert!(list[0].caught_up_age.unwrap() < Duration::from_millis(30));
            assert_eq!(list[1].caught_up_age, None, "never caught up yet");
            assert!(wm.caught_up(1, 500));
            assert!(!wm.caught_up(2, 500));
            assert!(!wm.caught_up(9, 0));
            assert!(!wm.in_sync(2, 500, Duration::from_millis(30)));
            // b reaches where the master was at its previous ack (500) while the master moved on:
            // it was caught up as of that ack.
            glommio::timer::sleep(Duration::from_millis(60)).await;
            wm.ack(b, 500, 900);
            let age = wm.slaves()[1].caught_up_age.unwrap();
            assert!(age >= Duration::from_millis(60), "{age:?}");
            assert!(age < Duration::from_millis(60 + 500), "{age:?}");
            assert!(!wm.caught_up(2, 900));
            assert!(wm.in_sync(2, 900, Duration::from_secs(1)));
            assert!(!wm.in_sync(2, 900, Duration::from_millis(10)));
        });
    }

    /// Under a steady stream of puts each ack covers what the master had a few acks earlier and
    /// never its end at the moment: the slave is caught up as of those earlier ends. Reaching only
    /// the end at the previous ack (the old rule) left it "never caught up", and out of the
    /// SyncStateSet, for as long as the stream lasted.
    #[test]
    fn a_slave_a_few_acks_behind_a_moving_master_was_caught_up_moments_ago() {
        run(|| async {
            let wm = Watermark::new();
            let a = wm.connected_as(0, 1);
            let mut end = 0i64;
            for _ in 0..40 {
                end += 100;
                wm.ack(a, (end - 300).max(0), end);
                glommio::timer::sleep(Duration::from_millis(2)).await;
            }
            let age = wm.slaves()[0]
                .caught_up_age
                .expect("caught up as of an earlier end");
            assert!(age < Duration::from_millis(100), "{age:?}");
            assert!(!wm.caught_up(1, end));
            assert!(wm.in_sync(1, end, Duration::from_millis(500)));
            // The slave stops acking while the master moves on: its catch-up time ages.
            glommio::timer::sleep(Duration::from_millis(150)).await;
            assert!(!wm.in_sync(1, end + 100, Duration::from_millis(100)));
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
