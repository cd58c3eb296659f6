//! The control role, run by shard 0: the master topic table and subscription groups (persisted and
//! broadcast to the other shards, which keep copies), the client registry and its notifications, name-server registration,
//! client expiry, and the broker-wide shutdown sequence.

use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::body::TopicConfig;
use protocol::header::{CommandHeader, NotifyConsumerIdsChangedRequestHeader};
use protocol::{request_code, RemotingCommand};

use crate::shard::events::{broadcast, ShardEvent};
use crate::shard::lifecycle;
use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::control::Control;
use crate::state::subscription_groups::{may_auto_create, SubscriptionGroupConfig};

/// How often silent clients are looked for (RocketMQ scans every 10 s).
const CLIENT_SCAN_INTERVAL: Duration = Duration::from_secs(10);
/// Longest a graceful shutdown may take before the process gives up waiting.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(30);

fn control(shard: &Shard) -> Option<&Control> {
    shard.control.as_ref()
}

/// Writes topics.json (shard 0).
pub async fn persist_topics(shard: &Shard) {
    let Some(ctl) = control(shard) else { return };
    let Ok(_permit) = ctl.persist_lock.acquire_permit(1).await else {
        return;
    };
    let json = shard.topics.borrow().to_json();
    let path = shard
        .cfg
        .store_path_root_dir
        .join("config")
        .join("topics.json");
    if let Err(e) = crate::state::persist::write_atomic_off_thread(path.clone(), json).await {
        tracing::error!("cannot persist {}: {e}", path.display());
    }
}

/// Writes subscriptionGroup.json (shard 0).
pub async fn persist_groups(shard: &Shard) {
    let Some(ctl) = control(shard) else { return };
    let Ok(_permit) = ctl.persist_lock.acquire_permit(1).await else {
        return;
    };
    let json = shard.groups.borrow().to_json();
    let path = shard
        .cfg
        .store_path_root_dir
        .join("config")
        .join("subscriptionGroup.json");
    if let Err(e) = crate::state::persist::write_atomic_off_thread(path.clone(), json).await {
        tracing::error!("cannot persist {}: {e}", path.display());
    }
}

/// Registers with the name servers in the background. Changes in quick succession share one round:
/// a round that has not started yet will send the table as it is when it starts.
pub fn register_soon(shard: &Rc<Shard>) {
    let Some(ctl) = control(shard) else { return };
    if ctl.registration_queued.replace(true) {
        return;
    }
    let shard = shard.clone();
    glommio::spawn_local(async move {
        register_now(&shard).await;
    })
    .detach();
}

pub async fn register_now(shard: &Shard) -> usize {
    let Some(ctl) = control(shard) else { return 0 };
    let Ok(_round) = ctl.registration_round.acquire_permit(1).await else {
        return 0;
    };
    ctl.registration_queued.set(false);
    if shard.cfg.controller.enabled && shard.ha.role.get().is_none() {
        // Controller mode: clients learn of this broker once the controllers gave it a role.
        return 0;
    }
    let wrapper = shard.topics.borrow().wrapper();
    ctl.registrar
        .register_all(&shard.effective_cfg(), shard.shards, wrapper)
        .await
}

/// Changes the master topic table, persists it, tells every other shard, and re-registers.
pub async fn change_topic(shard: &Rc<Shard>, upsert: Option<TopicConfig>, remove: Option<String>) {
    let version = {
        let mut table = shard.topics.borrow_mut();
        if let Some(tc) = &upsert {
            table.upsert(tc.clone());
        }
        if let Some(name) = &remove {
            table.remove(name);
        }
        table.data_version
    };
    persist_topics(shard).await;
    broadcast(
        shard,
        ShardEvent::TopicChanged {
            upsert,
            remove,
            version,
        },
    )
    .await;
    register_soon(shard);
}

/// Creates a topic unless it exists; answers the config in force.
pub async fn create_topic(shard: &Rc<Shard>, tc: TopicConfig) -> TopicConfig {
    let existing = shard.topics.borrow().get(&tc.topic_name).cloned();
    if let Some(existing) = existing {
        return existing;
    }
    tracing::info!(
        "creating topic {} ({} queues, perm {})",
        tc.topic_name,
        tc.write_queue_nums,
        tc.perm
    );
    change_topic(shard, Some(tc.clone()), None).await;
    tc
}

/// Changes the master subscription groups, persists them and tells every other shard (whose copies
/// the pulls on their queues read).
pub async fn change_groups(
    shard: &Rc<Shard>,
    upsert: Vec<SubscriptionGroupConfig>,
    remove: Vec<String>,
) {
    if control(shard).is_none() {
        return;
    }
    let version = {
        let mut groups = shard.groups.borrow_mut();
        groups.change(&upsert, &remove);
        groups.data_version
    };
    persist_groups(shard).await;
    broadcast(
        shard,
        ShardEvent::GroupsChanged {
            upsert,
            remove,
            version,
        },
    )
    .await;
}

/// Creates a subscription group with RocketMQ's defaults unless it exists, if the broker may create
/// it (`autoCreateSubscriptionGroup`, or a system group); answers the settings in force.
pub async fn ensure_group(shard: &Rc<Shard>, group: &str) -> Option<SubscriptionGroupConfig> {
    let existing = shard.groups.borrow().get(group).cloned();
    if existing.is_some() {
        return existing;
    }
    if !may_auto_create(shard.cfg.auto_create_subscription_group, group) {
        return None;
    }
    let config = SubscriptionGroupConfig::new(group);
    tracing::info!("subscription group {group} created on first use");
    change_groups(shard, vec![config.clone()], Vec::new()).await;
    Some(config)
}

/// Tells every other shard a group's current subscriptions (used for pull filtering) and whether
/// its consumers consume by broadcast (pulls of such groups are refused without
/// `consumeBroadcastEnable`).
pub async fn broadcast_subscriptions(shard: &Rc<Shard>, group: &str) {
    let Some(ctl) = control(shard) else { return };
    let (subs, broadcasting) = {
        let clients = ctl.clients.borrow();
        (clients.subscriptions(group), clients.is_broadcasting(group))
    };
    shard.set_group_broadcasting(group, broadcasting);
    shard.set_group_subscriptions(group.to_owned(), subs.clone());
    broadcast(
        shard,
        ShardEvent::GroupSubscriptions {
            group: group.to_owned(),
            subscriptions: subs,
            broadcasting,
        },
    )
    .await;
}

/// Sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every client of a group.
pub async fn notify_group(shard: &Rc<Shard>, group: &str) {
    let Some(ctl) = control(shard) else { return };
    let enabled = shard
        .groups
        .borrow()
        .get(group)
        .is_none_or(|g| g.notify_consumer_ids_changed_enable);
    if !enabled {
        return;
    }
    let conns = ctl.clients.borrow().consumer_conns(group);
    let header = NotifyConsumerIdsChangedRequestHeader {
        consumer_group: group.to_owned(),
    };
    for conn in conns {
        let mut cmd = RemotingCommand::request(request_code::NOTIFY_CONSUMER_IDS_CHANGED)
            .with_ext_fields(header.to_ext_fields());
        cmd.mark_oneway();
        shard.on(conn.shard).notify(conn.conn_id, cmd).await;
    }
}

/// Queue locks of clients that left a group are released at once: a departed orderly consumer cannot
/// consume any more, and some clients (the C++ one) leave locks behind at shutdown, which would stall
/// their queues for the 60 s lock lifetime.
fn release_locks_of_departed(shard: &Shard, group: &str) {
    let Some(ctl) = control(shard) else { return };
    let members = ctl.clients.borrow().consumer_ids(group).unwrap_or_default();
    let released = ctl.locks.borrow_mut().release_departed(group, &members);
    if released > 0 {
        tracing::info!("released {released} queue lock(s) of clients that left group {group}");
    }
}

/// A connection of shard `from` that had registered clients closed: its clients leave their groups.
pub async fn connection_closed(shard: &Rc<Shard>, from: usize, conn_id: u64) {
    let changed = match control(shard) {
        Some(ctl) => ctl.clients.borrow_mut().connection_closed(from, conn_id),
        None => Vec::new(),
    };
    groups_changed(shard, changed).await;
}

/// After groups lost members: notify the rest and refresh subscriptions.
pub async fn groups_changed(shard: &Rc<Shard>, groups: Vec<String>) {
    for group in groups {
        tracing::info!("consumer group {group} changed membership");
        release_locks_of_departed(shard, &group);
        notify_group(shard, &group).await;
        broadcast_subscriptions(shard, &group).await;
    }
}

/// Starts shard 0's periodic work: name-server registration, client expiry, signal watch.
pub fn start_tasks(shard: &Rc<Shard>, signals: Option<crate::startup::signals::SignalFd>) {
    let period = Duration::from_millis(
        shard
            .cfg
            .register_name_server_period_ms
            .clamp(1_000, 60_000),
    );
    let s = shard.clone();
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(period).await;
            if s.shutting_down.get() {
                return;
            }
            register_now(&s).await;
        }
    })
    .detach();

    let s = shard.clone();
    let max_idle = Duration::from_secs(shard.cfg.server_channel_max_idle_time_seconds.max(1));
    // Scan often enough that a short idle limit is honoured within about half of it.
    let scan = CLIENT_SCAN_INTERVAL.min(max_idle / 2);
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(scan).await;
            if s.shutting_down.get() {
                return;
            }
            let expired = match control(&s) {
                Some(ctl) => ctl.clients.borrow_mut().expire(Instant::now(), max_idle),
                None => Vec::new(),
            };
            if !expired.is_empty() {
                tracing::info!(
                    "clients of groups {expired:?} silent for over {max_idle:?}: removed"
                );
                groups_changed(&s, expired).await;
            }
        }
    })
    .detach();

    if let Some(signals) = signals {
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
}

/// The broker-wide graceful stop: every shard stops accepting and drains, then every store flushes and
/// checkpoints, then shard 0 unregisters from the name servers and every executor ends.
pub async fn shutdown_broker(shard: &Rc<Shard>) {
    remoting::sd_notify::notify_stopping();
    let all = || 0..shard.shards;
    join_all(all().map(|s| lifecycle::drain(shard, s))).await;
    join_all(all().map(|s| lifecycle::shut_store(shard, s))).await;
    // Every store is flushed now: all delivered delay units are safe.
    join_all(all().map(|s| {
        shard
            .on(s)
            .run(|s| async move { crate::feature::schedule::persist(&s, true).await })
    }))
    .await;
    if let Some(ctl) = control(shard) {
        ctl.registrar
            .unregister_all(&shard.effective_cfg(), shard.shards)
            .await;
    }
    persist_topics(shard).await;
    persist_groups(shard).await;
    for s in all().filter(|s| *s != shard.id) {
        lifecycle::exit(shard, s).await;
    }
    tracing::info!("broker {} shut down cleanly", shard.cfg.broker_name);
    shard.exit.fire();
}
