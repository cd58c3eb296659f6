//! The broker-wide graceful stop, run by the control shard when a signal arrives: every shard stops
//! accepting and drains its in-flight requests, then every store flushes and checkpoints, then shard 0
//! unregisters from the name servers and every executor ends.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::startup::signals::SignalFd;

/// Longest the drain phase waits for in-flight requests.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// Longest a graceful shutdown may take before the process gives up waiting.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(30);

/// Shard 0: waits for SIGTERM or SIGINT, then shuts the broker down.
pub fn watch_signals(shard: &Rc<Shard>, signals: SignalFd) {
    let s = shard.clone();
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(Duration::from_millis(100)).await;
            if let Some(signo) = signals.poll() {
                tracing::info!("signal {signo} received: shutting down");
                break;
            }
        }
        // A second signal or a stuck shutdown ends the process anyway.
        let watchdog = std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < SHUTDOWN_LIMIT {
                std::thread::sleep(Duration::from_millis(100));
                if signals.poll().is_some() {
                    tracing::warn!("second signal: exiting without finishing the shutdown");
                    std::process::exit(1);
                }
            }
            tracing::error!("shutdown took over {SHUTDOWN_LIMIT:?}: exiting");
            std::process::exit(1);
        });
        drop(watchdog);
        shutdown_broker(&s).await;
    })
    .detach();
}

/// The broker-wide graceful stop (shard 0).
pub async fn shutdown_broker(shard: &Rc<Shard>) {
    remoting::sd_notify::notify_stopping();
    let all = || shard.every_shard();
    for (result, s) in join_all(all().map(|s| s.drain()))
        .await
        .into_iter()
        .zip(all())
    {
        if let Err(e) = result {
            tracing::warn!("shard {} did not drain: {e}", s.id());
        }
    }
    for (result, s) in join_all(all().map(|s| s.shut_store()))
        .await
        .into_iter()
        .zip(all())
    {
        if let Err(e) = result {
            tracing::warn!("shard {} did not shut its store: {e}", s.id());
        }
    }
    // Every store is flushed now: all delivered delay units are safe.
    join_all(all().map(|s| s.persist_delay_offsets())).await;
    crate::role::namesrv::unregister_all(shard).await;
    crate::role::control::persist_topics(shard).await;
    crate::role::control::persist_groups(shard).await;
    for s in shard.other_shards() {
        s.exit().await;
    }
    tracing::info!("broker {} shut down cleanly", shard.cfg.broker_name);
    shard.exit.fire();
}

/// Stops accepting, releases parked pulls, waits (bounded) for this shard's requests to finish.
pub async fn drain_here(shard: &Shard) {
    let waiters = crate::feature::long_poll::waiters(shard);
    shard.shutting_down.set(true);
    shard.stop_accepting.fire();
    waiters.wake_all();
    let start = Instant::now();
    while shard.in_flight.get() > 0 && start.elapsed() < DRAIN_LIMIT {
        glommio::timer::sleep(Duration::from_millis(5)).await;
        // Pulls parked after the first wake-up must not wait out their suspend time.
        waiters.wake_all();
    }
    if shard.in_flight.get() > 0 {
        tracing::warn!(
            "shard {}: {} requests still running after {DRAIN_LIMIT:?}",
            shard.id,
            shard.in_flight.get()
        );
    }
}

/// Persists this shard's consumer offsets if they changed, with where the POP revive log's replay
/// starts (the revive group's offset), so it is persisted with the pop positions it matches.
pub async fn persist_offsets(shard: &Shard) {
    crate::feature::pop::note_revive_offset(shard);
    shard.persist_offsets().await;
}
