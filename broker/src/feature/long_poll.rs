//! Long polling: pulls that found nothing park on their queue until the store's arrival hook fires for
//! it (or their suspend time passes). One registry per shard; single-threaded, no locks.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct Slot {
    fired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Slot {
    fn fire(&self) {
        self.fired.set(true);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// Resolves when the queue it was registered for gets a message (or all waiters are woken).
pub struct Arrival {
    slot: Rc<Slot>,
}

impl Future for Arrival {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.slot.fired.get() {
            return Poll::Ready(());
        }
        *self.slot.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Resolves when any of `arrivals` does (a pop waits on several queues); never when there are none.
pub fn any(mut arrivals: Vec<Arrival>) -> impl Future<Output = ()> {
    std::future::poll_fn(move |cx| {
        for a in arrivals.iter_mut() {
            if Pin::new(a).poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    })
}

type QueueWaiters = HashMap<i32, Vec<Weak<Slot>>>;

/// This shard's parked pulls.
pub fn waiters(shard: &crate::shard::Shard) -> Rc<PullWaiters> {
    shard.extensions.get()
}

/// Parked pulls of one shard, by topic and queue.
#[derive(Default)]
pub struct PullWaiters {
    by_topic: RefCell<HashMap<String, QueueWaiters>>,
    registered: Cell<usize>,
}

/// Beyond this many parked entries on one queue, dead ones (timed out) are pruned on register.
const PRUNE_AT: usize = 64;

impl PullWaiters {
    /// Registers interest in the next arrival on `(topic, queue_id)`.
    pub fn register(&self, topic: &str, queue_id: i32) -> Arrival {
        let slot = Rc::new(Slot::default());
        let mut map = self.by_topic.borrow_mut();
        let list = map
            .entry(topic.to_owned())
            .or_default()
            .entry(queue_id)
            .or_default();
        if list.len() >= PRUNE_AT {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(Rc::downgrade(&slot));
        self.registered.set(self.registered.get() + 1);
        Arrival { slot }
    }

    /// Called by the store's arrival hook: wakes every pull parked on the queue.
    pub fn notify(&self, topic: &str, queue_id: i32) {
        if self.registered.get() == 0 {
            return;
        }
        let woken = {
            let mut map = self.by_topic.borrow_mut();
            let Some(queues) = map.get_mut(topic) else {
                return;
            };
            let woken = queues.remove(&queue_id);
            if queues.is_empty() {
                map.remove(topic);
            }
            woken
        };
        // Wake outside the borrow: a woken task may register again.
        if let Some(list) = woken {
            self.registered
                .set(self.registered.get().saturating_sub(list.len()));
            for slot in list.iter().filter_map(Weak::upgrade) {
                slot.fire();
            }
        }
    }

    /// Wakes every parked pull (shutdown).
    pub fn wake_all(&self) {
        let all = std::mem::take(&mut *self.by_topic.borrow_mut());
        self.registered.set(0);
        for slot in all
            .into_values()
            .flat_map(HashMap::into_values)
            .flatten()
            .filter_map(|w| w.upgrade())
        {
            slot.fire();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::poll_once;

    #[test]
    fn arrival_wakes_only_its_queue() {
        glommio::LocalExecutor::default().run(async {
            let waiters = PullWaiters::default();
            let mut a = waiters.register("T", 0);
            let mut b = waiters.register("T", 1);
            assert!(poll_once(&mut a).await.is_none());
            waiters.notify("T", 1);
            assert!(poll_once(&mut a).await.is_none());
            assert!(poll_once(&mut b).await.is_some());
            waiters.notify("U", 0);
            assert!(poll_once(&mut a).await.is_none());
            waiters.notify("T", 0);
            assert!(poll_once(&mut a).await.is_some());
            let mut c = waiters.register("X", 9);
            waiters.wake_all();
            assert!(poll_once(&mut c).await.is_some());
        });
    }

    #[test]
    fn dropped_waiters_are_pruned() {
        let waiters = PullWaiters::default();
        for _ in 0..(PRUNE_AT * 3) {
            drop(waiters.register("T", 0));
        }
        let len = waiters.by_topic.borrow()["T"][&0].len();
        assert!(len <= PRUNE_AT + 1, "{len}");
    }
}
