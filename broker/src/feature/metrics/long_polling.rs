//! Whether the request a connection's task is handling was parked as a long poll (Apache's
//! `is_long_polling` label of `rocketmq_rpc_latency`): `observe` polls the request's future with a
//! flag installed in a thread-local for the duration of each poll, and a parked pull or pop (`mark`,
//! called where it parks) sets the flag of the request being polled. A request handled on another
//! shard (`shardRouting = forward`) is observed there and its mark passed back with the answer
//! (`ShardRef::process`).

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

thread_local! {
    static CURRENT: Cell<Option<Rc<Cell<bool>>>> = const { Cell::new(None) };
}

/// Marks the request being polled on this thread, if any, as parked.
pub fn mark() {
    CURRENT.with(|c| {
        let flag = c.take();
        if let Some(f) = &flag {
            f.set(true);
        }
        c.set(flag);
    });
}

/// Runs `fut` and answers its output and whether it was marked while it ran.
pub async fn observe<F: Future>(fut: F) -> (F::Output, bool) {
    let flag = Rc::new(Cell::new(false));
    let mut fut = pin!(fut);
    let out = std::future::poll_fn(|cx| {
        let outer = CURRENT.with(|c| c.replace(Some(flag.clone())));
        let r = fut.as_mut().poll(cx);
        CURRENT.with(|c| c.set(outer));
        match r {
            Poll::Ready(v) => Poll::Ready(v),
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
    (out, flag.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_request_that_parked_is_marked() {
        futures_lite::future::block_on(async {
            let (v, parked) = observe(async {
                futures_lite::future::yield_now().await;
                mark();
                7
            })
            .await;
            assert_eq!((v, parked), (7, true));
            let ((), parked) = observe(async {}).await;
            assert!(!parked);
            // Outside any request: nothing to mark, no panic.
            mark();
        });
    }
}
