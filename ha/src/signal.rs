//! A wake-up for "new data was appended to this shard's log", so a master's sender streams at once
//! instead of polling. Single executor, no locks.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct State {
    seq: u64,
    wakers: Vec<Waker>,
}

/// Raised by the broker after every append; awaited by the senders of that shard.
#[derive(Clone, Default)]
pub struct DataSignal {
    state: Rc<RefCell<State>>,
}

impl DataSignal {
    pub fn new() -> DataSignal {
        DataSignal::default()
    }

    /// The current sequence number; pass it to `changed` to wait for a later raise.
    pub fn seq(&self) -> u64 {
        self.state.borrow().seq
    }

    pub fn raise(&self) {
        let wakers = {
            let mut st = self.state.borrow_mut();
            st.seq = st.seq.wrapping_add(1);
            std::mem::take(&mut st.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Resolves once `raise` was called after `seq` was read.
    pub fn changed(&self, seq: u64) -> impl Future<Output = ()> {
        Changed {
            signal: self.clone(),
            seq,
        }
    }
}

struct Changed {
    signal: DataSignal,
    seq: u64,
}

impl Future for Changed {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.signal.state.borrow_mut();
        if st.seq != self.seq {
            return Poll::Ready(());
        }
        if !st.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            st.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
