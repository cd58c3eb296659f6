//! Joining the cross-shard channel mesh, with the executor woken every few milliseconds until it has.
//!
//! glommio's mesh join connects its shared channels with no timer and no other task running. A
//! wake-up from another executor can be lost there (seen on 2026-12-06 under load, about 3 starts in
//! 50: executor 0 asleep in `io_cqring_wait` waiting for the join's notification, which executor 1
//! had sent, while executor 1 spun waiting for executor 0's side of a channel; the broker never
//! served). A woken reactor checks every shared channel it waits on, so a short timer beside the join
//! turns a lost wake-up into a delay of one tick.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::channel_mesh::{Full, MeshBuilder, Receivers, Senders};

/// How often a joining executor wakes to look at its channels again.
const TICK: Duration = Duration::from_millis(5);

/// `mesh.join()`, with this executor woken every `TICK` until it returns.
pub(crate) async fn join<T: Send + 'static>(
    mesh: MeshBuilder<T, Full>,
) -> glommio::Result<(Senders<T>, Receivers<T>), ()> {
    let joined = Rc::new(Cell::new(false));
    let ticking = joined.clone();
    glommio::spawn_local(async move {
        while !ticking.get() {
            glommio::timer::sleep(TICK).await;
        }
    })
    .detach();
    let result = mesh.join().await;
    joined.set(true);
    result
}
