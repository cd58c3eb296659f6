//! Group commit plumbing: the signal that wakes the flusher task and the appenders waiting for the
//! flush that covers their record.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Wakes the flusher when there is something to write.
#[derive(Default)]
pub(crate) struct FlushSignal {
    raised: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl FlushSignal {
    pub fn raise(&self) {
        self.raised.set(true);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Resolves once `raise` was called (consuming the signal).
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.raised.replace(false) {
                Poll::Ready(())
            } else {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// Appenders waiting for the durable offset to pass their record's end.
#[derive(Default)]
pub(crate) struct FlushWaiters {
    /// Durable shard-local offset.
    pub flushed: Cell<u64>,
    /// Bumped on each failed flush: waiters that saw an older value fail.
    pub failures: Cell<u64>,
    pub last_error: RefCell<String>,
    queue: RefCell<VecDeque<(u64, Waker)>>,
}

impl FlushWaiters {
    /// Records a successful flush up to `flushed` and wakes the covered waiters.
    pub fn advance(&self, flushed: u64) {
        self.flushed.set(flushed);
        let mut woken = Vec::new();
        {
            let mut q = self.queue.borrow_mut();
            while q.front().is_some_and(|(end, _)| *end <= flushed) {
                if let Some((_, w)) = q.pop_front() {
                    woken.push(w);
                }
            }
        }
        woken.into_iter().for_each(Waker::wake);
    }

    /// Records a failed flush and wakes every waiter.
    pub fn fail(&self, error: String) {
        self.failures.set(self.failures.get() + 1);
        *self.last_error.borrow_mut() = error;
        let woken: Vec<_> = self.queue.borrow_mut().drain(..).map(|(_, w)| w).collect();
        woken.into_iter().for_each(Waker::wake);
    }

    pub fn wait(&self, end: u64) -> FlushWait<'_> {
        FlushWait {
            waiters: self,
            end,
            failures_seen: self.failures.get(),
        }
    }
}

/// Resolves when the log is durable up to `end`, or with the error of a failed flush.
pub(crate) struct FlushWait<'a> {
    waiters: &'a FlushWaiters,
    end: u64,
    failures_seen: u64,
}

impl Future for FlushWait<'_> {
    type Output = Result<(), String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let w = self.waiters;
        if w.flushed.get() >= self.end {
            return Poll::Ready(Ok(()));
        }
        if w.failures.get() != self.failures_seen {
            return Poll::Ready(Err(w.last_error.borrow().clone()));
        }
        let mut q = w.queue.borrow_mut();
        // Appends arrive in offset order, so pushing at the back keeps the queue sorted; a re-poll
        // replaces nothing but is harmless (the stale waker is woken once).
        let pos = q
            .iter()
            .rposition(|(e, _)| *e <= self.end)
            .map_or(0, |p| p + 1);
        q.insert(pos, (self.end, cx.waker().clone()));
        Poll::Pending
    }
}
