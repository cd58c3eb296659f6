//! The broker-wide graceful stop, run by the control shard: every shard stops accepting and drains
//! its in-flight requests, then every store flushes and checkpoints, then every executor ends.

use std::time::{Duration, Instant};

use crate::shard::Shard;

/// Longest the drain phase waits for in-flight requests.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Phase 1 on shard `to`: stop accepting, answer parked pulls, wait for requests and deliveries.
pub async fn drain(shard: &Shard, to: usize) {
    let done = shard
        .on(to)
        .run(|s| async move {
            drain_here(&s).await;
            crate::feature::schedule::quiesce(&s).await;
        })
        .await;
    if let Err(e) = done {
        tracing::warn!("shard {to} did not drain: {e}");
    }
}

/// Phase 2 on shard `to`: persist offsets, flush and checkpoint the store.
pub async fn shut_store(shard: &Shard, to: usize) {
    let done = shard
        .on(to)
        .run(|s| async move {
            s.persist_offsets().await;
            s.store.shutdown().await;
            tracing::info!("shard {}: store flushed and checkpointed", s.id);
        })
        .await;
    if let Err(e) = done {
        tracing::warn!("shard {to} did not shut its store: {e}");
    }
}

/// Phase 3 on shard `to`: let its executor end.
pub async fn exit(shard: &Shard, to: usize) {
    shard.on(to).tell(|s| async move { s.exit.fire() }).await
}

/// Stops accepting, releases parked pulls, waits (bounded) for this shard's requests to finish.
async fn drain_here(shard: &Shard) {
    shard.shutting_down.set(true);
    shard.stop_accepting.fire();
    shard.waiters.wake_all();
    let start = Instant::now();
    while shard.in_flight.get() > 0 && start.elapsed() < DRAIN_LIMIT {
        glommio::timer::sleep(Duration::from_millis(5)).await;
        // Pulls parked after the first wake-up must not wait out their suspend time.
        shard.waiters.wake_all();
    }
    if shard.in_flight.get() > 0 {
        tracing::warn!(
            "shard {}: {} requests still running after {DRAIN_LIMIT:?}",
            shard.id,
            shard.in_flight.get()
        );
    }
}
