//! The control role, run by shard 0: the master topic table and subscription groups (persisted and
//! broadcast to the other shards, which keep copies), the client registry and its notifications,
//! name-server registration and client expiry. The shutdown sequence is `startup::lifecycle`.

use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::body::TopicConfig;
use protocol::header::{CommandHeader, NotifyConsumerIdsChangedRequestHeader};
use protocol::{request_code, RemotingCommand};

use crate::role::namesrv::registrar;
use crate::shard::events::{broadcast, ShardEvent};
use crate::shard::Shard;
use crate::state::control::Control;
use crate::state::subscription_groups::{may_auto_create, SubscriptionGroupConfig};

/// How often silent clients are looked for (RocketMQ scans every 10 s).
const CLIENT_SCAN_INTERVAL: Duration = Duration::from_secs(10);

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

/// Writes `auth` to `config/auth.json` (shard 0), then keeps it and sends it to every other shard;
/// the caller holds `persist_lock` (with the copy it changed), so nothing is kept that is not stored.
pub async fn store_auth(
    shard: &Shard,
    auth: crate::state::auth_metadata::AuthMetadata,
) -> std::io::Result<()> {
    if control(shard).is_none() {
        return Ok(());
    }
    let path = shard
        .cfg
        .store_path_root_dir
        .join("config")
        .join(crate::state::auth_metadata::AUTH_FILE);
    crate::state::persist::write_atomic_off_thread(path, auth.to_json()).await?;
    *shard.auth.borrow_mut() = auth.clone();
    crate::shard::events::broadcast(shard, crate::shard::events::ShardEvent::AuthChanged(auth))
        .await;
    Ok(())
}

/// Registers with the name servers in the background. Changes in quick succession share one round:
/// a round that has not started yet will send the table as it is when it starts.
pub fn register_soon(shard: &Rc<Shard>) {
    let Some(registrar) = registrar(shard) else {
        return;
    };
    if registrar.queued.replace(true) {
        return;
    }
    let shard = shard.clone();
    glommio::spawn_local(async move {
        register_now(&shard).await;
    })
    .detach();
}

pub async fn register_now(shard: &Shard) -> usize {
    let Some(registrar) = registrar(shard) else {
        return 0;
    };
    let Ok(_round) = registrar.round.acquire_permit(1).await else {
        return 0;
    };
    registrar.queued.set(false);
    let replicas =
        crate::replication::replica_state::replicas(shard).filter(|_| shard.cfg.controller.enabled);
    // Controller mode: a role change under way ends first, so the brokerId and the master epoch
    // sent are those of one role (a deposed master must not send the new epoch as brokerId 0).
    let changing = match &replicas {
        Some(r) => match r.changing.acquire_permit(1).await {
            Ok(permit) => Some(permit),
            Err(_) => return 0,
        },
        None => None,
    };
    if shard.cfg.controller.enabled && shard.chosen_role.get().is_none() {
        // Controller mode: clients learn of this broker once the controllers gave it a role.
        return 0;
    }
    let epoch = replicas
        .as_ref()
        .map_or(0, |r| r.state.borrow().master_epoch);
    let wrapper = registration_topics(&shard.topics.borrow(), epoch);
    let cfg = shard.effective_cfg();
    drop(changing);
    registrar.register_all(&cfg, shard.shards, wrapper).await
}

/// The topic table a registration sends. Its DataVersion's `stateVersion` is the master epoch
/// this broker last learnt from the controllers (0 in classic mode), as Apache's broker sets it on
/// every role change: a name server ignores a registration for a brokerId whose holder registered
/// a higher one, so a deposed master that has not learnt its successor yet cannot replace it.
pub fn registration_topics(
    topics: &crate::state::topics::TopicTable,
    master_epoch: i32,
) -> protocol::body::TopicConfigSerializeWrapper {
    let mut wrapper = topics.wrapper();
    wrapper.data_version.state_version = i64::from(master_epoch);
    wrapper
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
    crate::feature::topic_policy::push(shard);
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
    if !may_auto_create(
        crate::config::live::auto_create_subscription_group(&shard.cfg),
        group,
    ) {
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
    crate::feature::pull_filter::subscriptions(shard).set_group_broadcasting(group, broadcasting);
    crate::feature::pull_filter::subscriptions(shard)
        .set_group_subscriptions(group.to_owned(), subs.clone());
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

/// Starts shard 0's periodic work: name-server registration and client expiry.
pub fn start_tasks(shard: &Rc<Shard>) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_carries_the_master_epoch_as_state_version() {
        let mut table = crate::state::topics::TopicTable::default();
        table.upsert(TopicConfig::new("T", 4));
        let classic = registration_topics(&table, 0);
        assert_eq!(classic.data_version.state_version, 0);
        assert_eq!(classic.data_version.counter, table.data_version.counter);
        let controller = registration_topics(&table, 7);
        assert_eq!(controller.data_version.state_version, 7);
        assert_eq!(controller.topic_config_table, table.topics);
        // A table stored with another broker's stateVersion registers this broker's epoch.
        table.data_version.state_version = 9;
        assert_eq!(registration_topics(&table, 3).data_version.state_version, 3);
        assert_eq!(registration_topics(&table, 0).data_version.state_version, 0);
    }
}
