//! A one-shot latch for one executor: tasks wait until it fires (shutdown phases).
//!
//! A waiter that goes away before the latch fires (a parked pull woken by a message, raced against
//! `stop_accepting`) takes its waker back out: a kept waker would keep its whole finished request
//! task allocated until shutdown, one per parked pull (the soak's steady memory growth).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
pub struct Latch {
    fired: Cell<bool>,
    next_id: Cell<u64>,
    /// Wakers of the pending `Wait`s, by the id of their `Wait`.
    wakers: RefCell<Vec<(u64, Waker)>>,
}

impl Latch {
    pub fn fire(&self) {
        self.fired.set(true);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for (_, w) in wakers {
            w.wake();
        }
    }

    /// Resolves once the latch has fired; dropping it early unregisters it.
    pub fn wait(&self) -> Wait<'_> {
        Wait {
            event: self,
            id: None,
        }
    }

    /// Wakers held for pending waits.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.wakers.borrow().len()
    }
}

/// The future of [`Latch::wait`].
pub struct Wait<'a> {
    event: &'a Latch,
    /// Set once this wait has stored a waker.
    id: Option<u64>,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let event = self.event;
        if event.fired.get() {
            return Poll::Ready(());
        }
        let mut wakers = event.wakers.borrow_mut();
        match self.id {
            Some(id) => {
                if let Some((_, w)) = wakers.iter_mut().find(|(i, _)| *i == id) {
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                } else {
                    wakers.push((id, cx.waker().clone()));
                }
            }
            None => {
                let id = event.next_id.get();
                event.next_id.set(id.wrapping_add(1));
                wakers.push((id, cx.waker().clone()));
                drop(wakers);
                self.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            let mut wakers = self.event.wakers.borrow_mut();
            if let Some(at) = wakers.iter().position(|(i, _)| *i == id) {
                wakers.swap_remove(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::poll_once;
    use futures_lite::FutureExt;

    #[test]
    fn waits_until_fired() {
        glommio::LocalExecutor::default().run(async {
            let ev = Latch::default();
            assert!(poll_once(ev.wait()).await.is_none());
            ev.fire();
            assert!(poll_once(ev.wait()).await.is_some());
        });
    }

    #[test]
    fn fire_wakes_a_pending_wait() {
        glommio::LocalExecutor::default().run(async {
            let ev = std::rc::Rc::new(Latch::default());
            let waiter = {
                let ev = ev.clone();
                glommio::spawn_local(async move { ev.wait().await })
            };
            futures_lite::future::yield_now().await;
            assert_eq!(ev.waiting(), 1);
            ev.fire();
            waiter.await;
            assert_eq!(ev.waiting(), 0);
        });
    }

    /// Each parked pull is its own task racing its arrival against `stop_accepting`: the waits that
    /// lose the race must not leave their wakers (and so their tasks) behind.
    #[test]
    fn dropped_waits_release_their_wakers() {
        glommio::LocalExecutor::default().run(async {
            let ev = std::rc::Rc::new(Latch::default());
            for _ in 0..500 {
                let ev = ev.clone();
                glommio::spawn_local(async move {
                    let arrival = async {};
                    // Pending wait polled first, then the arrival wins and the wait is dropped.
                    ev.wait().or(arrival).await;
                })
                .await;
            }
            assert_eq!(ev.waiting(), 0);
            let kept = ev.clone();
            let still_waiting = glommio::spawn_local(async move { kept.wait().await });
            futures_lite::future::yield_now().await;
            assert_eq!(ev.waiting(), 1);
            ev.fire();
            still_waiting.await;
        });
    }
}
