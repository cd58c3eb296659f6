//! A one-shot event for one executor: tasks wait until it fires (shutdown phases).

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

#[derive(Default)]
pub struct Event {
    fired: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl Event {
    pub fn fire(&self) {
        self.fired.set(true);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for w in wakers {
            w.wake();
        }
    }

    pub fn is_fired(&self) -> bool {
        self.fired.get()
    }

    /// Resolves once the event has fired.
    pub async fn wait(&self) {
        poll_fn(|cx| {
            if self.fired.get() {
                Poll::Ready(())
            } else {
                let mut wakers = self.wakers.borrow_mut();
                if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::poll_once;

    #[test]
    fn waits_until_fired() {
        glommio::LocalExecutor::default().run(async {
            let ev = Event::default();
            assert!(poll_once(ev.wait()).await.is_none());
            ev.fire();
            assert!(ev.is_fired());
            assert!(poll_once(ev.wait()).await.is_some());
        });
    }
}
