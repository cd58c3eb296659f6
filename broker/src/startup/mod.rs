//! Start-up: shard count and `shards.json`, metadata, signals, then one pinned glommio executor per
//! shard, each opening its own store, joining the cross-shard mesh and binding its own listeners.

pub(crate) mod executors;
pub(crate) mod lifecycle;
pub(crate) mod mesh_join;
pub(crate) mod progress;
pub(crate) mod shards_file;
pub(crate) mod signals;
pub(crate) mod store_config;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;

use glommio::channels::channel_mesh::{Full, MeshBuilder};
use storage::MessageStore;

use crate::config::BrokerConfig;
use crate::startup::store_config::store_config;
use crate::error::BrokerError;
use crate::shard::mesh::{join_all, Envelope, Mesh};
use crate::shard::{Shard, ShardParts};
use crate::startup::progress::{Stage, StartupProgress};
use crate::startup::signals::SignalFd;
use crate::state::consumer_offsets::{offsets_path, ConsumerOffsets};
use crate::state::auth_metadata::{AuthMetadata, AUTH_FILE};
use crate::state::control::Control;
use crate::state::subscription_groups::SubscriptionGroupTable;
use crate::state::topics::TopicTable;

/// Capacity of each cross-shard channel (per direction, per pair of shards).
const MESH_CHANNEL_CAPACITY: usize = 1024;

/// Everything a shard's executor starts from (sent to each executor thread).
#[derive(Clone)]
struct Boot {
    cfg: BrokerConfig,
    shards: usize,
    topics: TopicTable,
    groups: SubscriptionGroupTable,
    auth: AuthMetadata,
    mesh: MeshBuilder<Envelope<Shard>, Full>,
    signals: Option<SignalFd>,
    progress: Arc<StartupProgress>,
}

/// The number of shards: `shardCount`, or one per CPU.
pub fn shard_count(cfg: &BrokerConfig) -> usize {
    if cfg.shard_count > 0 {
        cfg.shard_count
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

fn socket_addr(host: &str, port: u16) -> Result<SocketAddr, BrokerError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            BrokerError::io(
                format!("{host}:{port}"),
                std::io::Error::other("cannot resolve address"),
            )
        })
}

/// Runs the broker until SIGTERM/SIGINT; returns after a graceful shutdown.
pub fn run(cfg: BrokerConfig) -> Result<(), BrokerError> {
    let shards = shard_count(&cfg);
    let root = cfg.store_path_root_dir.clone();
    std::fs::create_dir_all(root.join("config")).map_err(|e| BrokerError::io(root.display(), e))?;
    crate::startup::shards_file::check_or_record(&root, shards, cfg.shard_routing)?;
    // Every shard must be able to open its store and bind its ports: fail before starting threads.
    let mut listening = Vec::with_capacity(shards);
    for shard in 0..shards {
        store_config(&cfg, shard)?;
        listening.push(listen_addrs(&cfg, shard, shards)?);
    }

    let topics_path = root.join("config").join("topics.json");
    let mut topics = TopicTable::load(&topics_path)?;
    if topics.add_system_topics(&cfg, shards) {
        crate::state::persist::write_atomic(&topics_path, &topics.to_json())
            .map_err(|e| BrokerError::io(topics_path.display(), e))?;
    }
    let groups_path = root.join("config").join("subscriptionGroup.json");
    let mut groups = SubscriptionGroupTable::load(&groups_path)?;
    if groups.add_system_groups() {
        crate::state::persist::write_atomic(&groups_path, &groups.to_json())
            .map_err(|e| BrokerError::io(groups_path.display(), e))?;
    }

    let auth_path = root.join("config").join(AUTH_FILE);
    let mut auth = AuthMetadata::load(&auth_path)?;
    let added = crate::feature::acl2::bootstrap::apply(&cfg, &mut auth, || {
        crate::feature::acl::load(&crate::feature::acl::acl_file_path(&cfg))
    })
    .map_err(|reason| BrokerError::BadMetadata {
        path: auth_path.display().to_string(),
        reason,
    })?;
    if !added.is_empty() {
        crate::state::persist::write_atomic(&auth_path, &auth.to_json())
            .map_err(|e| BrokerError::io(auth_path.display(), e))?;
        tracing::info!("ACL 2.0: added {}", added.join(", "));
    }
    if cfg.auth.authentication_enabled && auth.users.is_empty() {
        tracing::warn!(
            "authenticationEnabled with no user: every request is refused until one exists \
             (set initAuthenticationUser)"
        );
    }

    let signals = match SignalFd::install() {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM/SIGINT ({e}); stop the broker with SIGKILL");
            None
        }
    };
    let progress = StartupProgress::new(shards);
    let boot = Boot {
        cfg: cfg.clone(),
        shards,
        topics,
        groups,
        auth,
        mesh: MeshBuilder::full(shards, MESH_CHANNEL_CAPACITY),
        signals,
        progress: progress.clone(),
    };
    tracing::info!(
        "starting broker {} of cluster {}: {shards} shards (shardRouting = {}), store {}, listening on {:?}",
        cfg.broker_name,
        cfg.broker_cluster_name,
        cfg.shard_routing.as_str(),
        root.display(),
        listening
    );
    progress.watch();
    let spin = (cfg.spin_before_park_micros > 0)
        .then(|| std::time::Duration::from_micros(cfg.spin_before_park_micros));
    crate::startup::executors::run_executors(shards, spin, move |_index| async move {
        if let Err(e) = shard_main(boot).await {
            // A shard that cannot run leaves the broker unable to serve its queues: stop everything.
            tracing::error!("{e}");
            eprintln!("broker failed to start: {e}");
            std::process::exit(1);
        }
    })
}

async fn shard_main(boot: Boot) -> Result<(), BrokerError> {
    let progress = boot.progress.claim();
    let (senders, receivers) = mesh_join::join(boot.mesh)
        .await
        .map_err(|e| BrokerError::Executor(format!("cannot join the cross-shard mesh: {e}")))?;
    let mesh = Mesh::new(senders);
    let id = mesh.me();
    progress.set_shard(id);
    progress.enter(Stage::OpeningStore);
    crate::feature::metrics::register_shard(id);
    let cfg = Rc::new(boot.cfg);
    let broker = cfg
        .shard_broker(id, boot.shards)
        .ok_or_else(|| BrokerError::ShardCount(format!("shard {id}: its ports pass 65535")))?;
    let store_host = socket_addr(&cfg.broker_ip1, broker.listen_port)?;
    let listen = listen_addrs(&cfg, id, boot.shards)?;
    let store = MessageStore::open(store_config(&cfg, id)?)
        .await
        .map_err(|e| BrokerError::Store {
            shard: id,
            reason: e.to_string(),
        })?;
    progress.enter(Stage::LoadingState);
    let offsets = ConsumerOffsets::load(&offsets_path(&cfg.store_path_root_dir, id))?;
    let control = (id == 0).then(Control::new);
    let shard = Rc::new(Shard::new(ShardParts {
        id,
        shards: boot.shards,
        cfg: cfg.clone(),
        broker,
        store_host,
        store,
        mesh: mesh.clone(),
        topics: boot.topics,
        groups: boot.groups,
        offsets,
        auth: boot.auth,
        control,
    }));
    crate::feature::topic_policy::start(&shard);
    let weak = Rc::downgrade(&shard);
    shard
        .store
        .set_arrival_listener(Box::new(move |topic, queue_id, _max| {
            if let Some(shard) = weak.upgrade() {
                crate::feature::long_poll::waiters(&shard).notify(topic, queue_id);
                crate::replication::ha::on_arrival(&shard, topic, queue_id);
            }
        }));
    let weak = Rc::downgrade(&shard);
    shard
        .store
        .set_consumer_positions(Box::new(move |topic, queue_id| {
            weak.upgrade()
                .map(|shard| shard.offsets.borrow().positions(topic, queue_id))
                .unwrap_or_default()
        }));
    progress.enter(Stage::Transactions);
    crate::feature::transaction::start(&shard).await?;
    progress.enter(Stage::PopRevive);
    crate::feature::pop::revive::start(&shard)
        .await
        .map_err(|reason| BrokerError::Store { shard: id, reason })?;
    progress.enter(Stage::Listening);
    // No await between binding and starting the mesh: no request can arrive before calls are served.
    crate::net::server::start_listeners(&shard, &listen)?;
    mesh.start(receivers, &shard);
    crate::replication::ha::start(&shard)?;
    start_offset_persistence(&shard);
    crate::feature::broker_stats::sampler::start(&shard);
    crate::feature::schedule::start(&shard);
    crate::feature::timer::start(&shard);

    if id == 0 {
        progress.enter(Stage::WaitingForShards);
        // Every shard answers once it serves; then the broker is up.
        let answers = join_all(shard.every_shard().map(|s| s.stats())).await;
        if let Some(Err(e)) = answers.into_iter().find(Result::is_err) {
            return Err(BrokerError::Mesh(e.to_string()));
        }
        crate::role::control::start_tasks(&shard);
        if let Some(signals) = boot.signals {
            crate::startup::lifecycle::watch_signals(&shard, signals);
        }
        crate::exporter::start(&shard)?;
        crate::exporter::apache::start(&shard)?;
        progress.enter(Stage::Registering);
        let registered = crate::role::control::register_now(&shard).await;
        if cfg.controller.enabled {
            crate::replication::replicas::start(&shard);
        }
        tracing::info!(
            "The broker[{}, {}] boot success. serializeType=JSON and name server is {} ({} accepted the registration)",
            cfg.broker_name,
            cfg.broker_addr(),
            cfg.namesrv_addr.join(";"),
            registered
        );
        println!(
            "The broker[{}, {}] boot success. serializeType=JSON and name server is {}",
            cfg.broker_name,
            cfg.broker_addr(),
            cfg.namesrv_addr.join(";")
        );
        remoting::sd_notify::notify_ready(&format!("serving on {}", cfg.broker_addr()));
        progress.enter(Stage::Serving);
        progress.broker_serving();
    } else {
        progress.enter(Stage::Serving);
    }
    shard.exit.wait().await;
    Ok(())
}

/// The addresses shard `shard` accepts clients on: the broker's ports (every shard binds them, with
/// `SO_REUSEPORT`) when shards are not brokers, else its own shard-broker's.
fn listen_addrs(
    cfg: &BrokerConfig,
    shard: usize,
    shards: usize,
) -> Result<Vec<SocketAddr>, BrokerError> {
    let broker = cfg.shard_broker(shard, shards).ok_or_else(|| {
        BrokerError::ShardCount(format!(
            "shard {shard}'s ports (listenPort {} + {} per shard) pass 65535; lower listenPort or shardCount",
            cfg.listen_port,
            crate::config::SHARD_PORT_STEP
        ))
    })?;
    let mut listen = vec![socket_addr(&cfg.bind_address, broker.listen_port)?];
    if broker.fast_listen_port != 0 {
        listen.push(socket_addr(&cfg.bind_address, broker.fast_listen_port)?);
    }
    Ok(listen)
}

/// Consumer offsets are written every 5 s when they changed (RocketMQ's flushConsumerOffsetInterval).
fn start_offset_persistence(shard: &Rc<Shard>) {
    let shard = shard.clone();
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(std::time::Duration::from_secs(5)).await;
            if shard.shutting_down.get() {
                return;
            }
            crate::startup::lifecycle::persist_offsets(&shard).await;
        }
    })
    .detach();
}
