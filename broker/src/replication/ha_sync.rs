//! Slave, shard 0: follows the master's address from the name server's registration answers, and
//! copies the master's consumer offsets, delay offsets and timer checkpoint every 3 s, its topic
//! config, subscription groups and ACL 2.0 users and ACLs every 10 s (RocketMQ's SlaveSynchronize), so
//! consumers that move to the slave keep their place and a promoted slave delivers again only the
//! delayed and timer messages the master delivered in the last seconds before it left. When shards are
//! brokers of their own, slave shard i follows master shard-broker i, and its consumer and delay
//! offsets come from that shard-broker (topics and groups are the whole process's).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::body::{ConsumerOffsetSerializeWrapper, TopicConfigSerializeWrapper};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use crate::config::auth::AuthConfig;

use crate::role::namesrv::MasterAddrs;
use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::auth_metadata::AuthMetadata;
use crate::state::subscription_groups::SubscriptionGroupTable;

/// How often a slave copies the master's consumer and delay offsets and timer checkpoint (RocketMQ
/// 5.x copies its timer checkpoint every 3 s): what the master delivered since the last copy is
/// delivered again by a promoted slave. Each copy is three small requests per master.
const SYNC_PERIOD: Duration = Duration::from_secs(3);
/// How often it copies the rest (topics, subscription groups, ACLs: tables that can be large and
/// change rarely; a change made through this broker's admin requests asks for a copy at once).
const FULL_SYNC_PERIOD: Duration = Duration::from_secs(10);
/// The first copy runs soon after start so a fresh slave has the topics at once.
const FIRST_SYNC_AFTER: Duration = Duration::from_secs(3);
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

pub fn start(shard: &Rc<Shard>) {
    let shard = shard.clone();
    glommio::spawn_local(async move {
        let mut next_sync = Instant::now() + FIRST_SYNC_AFTER;
        let mut next_full = next_sync;
        let mut client: Option<Client> = None;
        let mut known = BTreeMap::new();
        loop {
            glommio::timer::sleep(Duration::from_millis(500)).await;
            if shard.shutting_down.get() {
                return;
            }
            if shard.role() == crate::config::BrokerRole::Slave {
                crate::feature::timer::checkpoint::install_ready(&shard).await;
            } else {
                crate::feature::timer::checkpoint::pending(&shard)
                    .list
                    .borrow_mut()
                    .clear();
            }
            let learned = crate::role::namesrv::registrar(&shard)
                .map(|r| r.masters.borrow().clone())
                .unwrap_or_default();
            if !learned.is_empty() && learned != known {
                masters_learned(&shard, &learned).await;
                known = learned;
            }
            let soon = crate::replication::ha_state::ha(&shard)
                .sync_soon
                .replace(false);
            if Instant::now() < next_sync && !soon {
                continue;
            }
            if shard.role() != crate::config::BrokerRole::Slave {
                continue;
            }
            next_sync = Instant::now() + SYNC_PERIOD;
            let full = soon || Instant::now() >= next_full;
            let from_ns = crate::replication::ha_state::ha(&shard)
                .master_addr
                .borrow()
                .clone();
            let from_ha = crate::replication::ha_state::ha(&shard)
                .slave
                .master_addr
                .borrow()
                .clone();
            let Some(addr) = from_ns.or(from_ha) else {
                continue;
            };
            if client.as_ref().is_none_or(|c| c.is_closed()) {
                client = Client::connect_str(&addr, CALL_TIMEOUT).await.ok();
            }
            let Some(c) = client.clone() else {
                tracing::warn!("HA: cannot reach the master {addr} to copy its metadata");
                next_sync = Instant::now() + FIRST_SYNC_AFTER;
                continue;
            };
            match sync_all(&shard, &c, &known, full).await {
                Ok(()) if full => next_full = Instant::now() + FULL_SYNC_PERIOD,
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!("HA: copying metadata from the master {addr} failed: {e}");
                    client = None;
                    next_sync = Instant::now() + FIRST_SYNC_AFTER;
                }
            }
        }
    })
    .detach();
}

async fn fetch(client: &Client, auth: &AuthConfig, code: i32) -> Result<Vec<u8>, String> {
    let mut request = RemotingCommand::request(code);
    auth.sign_inner(&mut request);
    let resp = client
        .invoke(request, CALL_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    if resp.code != response_code::SUCCESS {
        return Err(format!(
            "request {code} answered {} {}",
            resp.code,
            resp.remark.unwrap_or_default()
        ));
    }
    Ok(resp.body.to_vec())
}

/// One round: consumer offsets, delay offsets, timer checkpoint and, when `full`, topics first and
/// subscription groups and ACLs after. `client` is connected to the master (shard-broker 0 when
/// shards are brokers); `masters` are the learned master addresses.
pub async fn sync_all(
    shard: &Rc<Shard>,
    client: &Client,
    masters: &BTreeMap<usize, MasterAddrs>,
    full: bool,
) -> Result<(), String> {
    if full {
        let body = fetch(client, &shard.cfg.auth, request_code::GET_ALL_TOPIC_CONFIG).await?;
        let topics: TopicConfigSerializeWrapper =
            protocol::body::from_json(&body).map_err(|e| e.to_string())?;
        install_topics(shard, topics).await;
    }

    if shard.is_broker {
        for s in 1..shard.shards {
            let Some(addr) = masters.get(&s).and_then(|(_, m)| m.clone()) else {
                tracing::warn!("HA: master of shard-broker {s} not known yet; its offsets wait");
                continue;
            };
            let c = Client::connect_str(&addr, CALL_TIMEOUT)
                .await
                .map_err(|e| format!("{addr}: {e}"))?;
            sync_offsets(shard, s, &c).await?;
        }
    }
    sync_offsets(shard, 0, client).await?;
    // Installed at once when this slave has replicated far enough, else at a later tick.
    crate::feature::timer::checkpoint::install_ready(shard).await;
    if !full {
        return Ok(());
    }

    let body = fetch(
        client,
        &shard.cfg.auth,
        request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    )
    .await?;
    let groups: SubscriptionGroupTable =
        protocol::body::from_json(&body).map_err(|e| e.to_string())?;
    install_groups(shard, groups).await;
    if let Err(e) = sync_auth(shard, client).await {
        if shard.cfg.ha_master_protocol == ha::MasterProtocol::Apache {
            // An Apache 4.x master has no ACL 2.0, a 5.x one without it enabled refuses the list.
            tracing::debug!("HA: ACL 2.0 users and ACLs not copied from the Apache master: {e}");
        } else {
            tracing::warn!("HA: ACL 2.0 users and ACLs not copied from the master: {e}");
        }
    }
    tracing::debug!("HA: metadata copied from the master");
    Ok(())
}

/// A JSON list answer; an empty body is an empty list (how the master says "none").
fn json_list<T: serde::de::DeserializeOwned>(body: Vec<u8>) -> Result<Vec<T>, String> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_slice(&body).map_err(|e| e.to_string())
}

/// Copies the master's ACL 2.0 users and ACLs (AUTH_LIST_USER, AUTH_LIST_ACL) when they differ.
async fn sync_auth(shard: &Rc<Shard>, client: &Client) -> Result<(), String> {
    let users = json_list(fetch(client, &shard.cfg.auth, request_code::AUTH_LIST_USER).await?)?;
    let acls = json_list(fetch(client, &shard.cfg.auth, request_code::AUTH_LIST_ACL).await?)?;
    let master = AuthMetadata::from_infos(users, acls)?;
    let Some(ctl) = shard.control.as_ref() else {
        return Ok(());
    };
    let Ok(_permit) = ctl.persist_lock.acquire_permit(1).await else {
        return Ok(());
    };
    if *shard.auth.borrow() == master {
        return Ok(());
    }
    crate::role::control::store_auth(shard, master)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!("HA: ACL 2.0 users and ACLs copied from the master");
    Ok(())
}

async fn install_topics(shard: &Rc<Shard>, master: TopicConfigSerializeWrapper) {
    for (name, tc) in master.topic_config_table {
        let same = shard.topics.borrow().get(&name) == Some(&tc);
        if !same {
            crate::role::control::change_topic(shard, Some(tc), None).await;
        }
    }
}

/// Consumer and delay offsets of the broker shard `first` belongs to, from its master.
async fn sync_offsets(shard: &Rc<Shard>, first: usize, client: &Client) -> Result<(), String> {
    let body = fetch(
        client,
        &shard.cfg.auth,
        request_code::GET_ALL_CONSUMER_OFFSET,
    )
    .await?;
    let offsets: ConsumerOffsetSerializeWrapper =
        protocol::body::from_json(&body).map_err(|e| e.to_string())?;
    install_offsets(shard, first, offsets).await;

    let body = fetch(client, &shard.cfg.auth, request_code::GET_ALL_DELAY_OFFSET).await?;
    let text = String::from_utf8_lossy(&body).into_owned();
    shard
        .on(first)
        .install_delay_offsets(text)
        .await
        .map_err(|e| e.to_string())??;

    // An Apache master's checkpoint counts what its time wheel read, not what it delivered: not
    // something this timer may start from.
    if shard.cfg.ha_master_protocol != ha::MasterProtocol::Apache {
        // A master that does not answer it (an older build) leaves the timer to start from this
        // slave's own watermark, as before; the rest of the copy goes on.
        let terms = crate::feature::timer::checkpoint::terms(shard, first).await?;
        match fetch(client, &shard.cfg.auth, request_code::GET_TIMER_CHECK_POINT)
            .await
            .and_then(|body| crate::feature::timer::checkpoint::Checkpoint::decode(&body))
        {
            Ok(Some(cp)) => crate::feature::timer::checkpoint::copied(shard, first, cp, terms),
            Ok(None) => {}
            Err(e) => tracing::debug!("HA: the master's timer checkpoint not copied: {e}"),
        }
    }
    Ok(())
}

async fn install_offsets(shard: &Rc<Shard>, first: usize, master: ConsumerOffsetSerializeWrapper) {
    let mut per_shard: Vec<Vec<(String, String, i32, i64)>> = vec![Vec::new(); shard.shards];
    for (key, queues) in master.offset_table {
        let Some((topic, group)) = key.split_once('@') else {
            continue;
        };
        for (queue_id, offset) in queues {
            let owner = shard.queue_owner(first, topic, queue_id);
            if let Some(list) = per_shard.get_mut(owner) {
                list.push((group.to_owned(), topic.to_owned(), queue_id, offset));
            }
        }
    }
    join_all(
        per_shard
            .into_iter()
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .map(|(s, entries)| shard.on(s).set_consumer_offsets(entries)),
    )
    .await;
}

/// On the owning shard: takes the master's offsets.
pub fn set_offsets(shard: &Shard, entries: Vec<(String, String, i32, i64)>) {
    if shard.role() != crate::config::BrokerRole::Slave {
        // Master since the copy was asked for (the old master answered late, after the failover):
        // its offsets would move this master's consumers and pop positions back.
        return;
    }
    let mut offsets = shard.offsets.borrow_mut();
    for (group, topic, queue_id, offset) in entries {
        if offsets.query(&group, &topic, queue_id) != Some(offset) {
            offsets.commit(&group, &topic, queue_id, offset);
        }
    }
}

async fn install_groups(shard: &Rc<Shard>, master: SubscriptionGroupTable) {
    let (upsert, remove) = {
        let mine = shard.groups.borrow();
        let upsert: Vec<_> = master
            .subscription_group_table
            .values()
            .filter(|g| mine.get(&g.group_name) != Some(*g))
            .cloned()
            .collect();
        let remove: Vec<String> = mine
            .subscription_group_table
            .keys()
            .filter(|name| !master.subscription_group_table.contains_key(*name))
            .cloned()
            .collect();
        (upsert, remove)
    };
    if !upsert.is_empty() || !remove.is_empty() {
        crate::role::control::change_groups(shard, upsert, remove).await;
    }
}

/// The name server told shard 0 where the masters are: tell every shard its own (the one master of
/// the process, or its shard-broker's).
async fn masters_learned(shard: &Rc<Shard>, masters: &BTreeMap<usize, MasterAddrs>) {
    for s in 0..shard.shards {
        let key = if shard.is_broker { s } else { 0 };
        let Some((ha_addr, master_addr)) = masters.get(&key).cloned() else {
            continue;
        };
        tracing::info!("HA: shard {s}'s master is {master_addr:?}, its HA address {ha_addr:?}");
        shard.on(s).follow_master(ha_addr, master_addr).await;
    }
}

pub(crate) fn set_master(shard: &Shard, ha_addr: Option<String>, master_addr: Option<String>) {
    *crate::replication::ha_state::ha(shard)
        .master_ha_addr
        .borrow_mut() = ha_addr;
    *crate::replication::ha_state::ha(shard)
        .master_addr
        .borrow_mut() = master_addr;
}
