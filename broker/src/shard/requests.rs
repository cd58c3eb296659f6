//! Everything one shard asks of another, in one list. `shard.owner(topic, queue)`, `shard.on(n)` and
//! `shard.control_shard()` name the target (`target`); each method here sends one job that calls one
//! named function on the target (over the mesh, or inline when the target is this shard) and returns
//! that function's typed answer, so "go to definition" leads from a caller into the target's code.
//!
//! `run` and `tell` are private to this file: a job crosses a core only through a request listed
//! here, and the mesh counts them by the name each passes (`Mesh::sent`). This is the one file of
//! `shard/` that names code of the layers above: what each request runs on its target.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use protocol::body::{OffsetWrapper, TopicConfig, TopicOffset};
use protocol::message::record::MessageRecord;
use protocol::RemotingCommand;

use crate::config::BrokerConfig;
use crate::feature::broker_stats::item::ItemWindows;
use crate::feature::broker_stats::{self, daily::DailyTotals, sampler::Rates};
use crate::feature::metrics::apache_local::{self, ApacheShardFigures};
use crate::feature::metrics::long_polling;
use crate::feature::pop::queue_pop::{PopRequest, QueuePop};
use crate::feature::pop::{self, QueueKey};
use crate::feature::schedule;
use crate::net::client_calls;
use crate::processor::admin_stats::{self, ResetTarget};
use crate::processor::clone_group_offset;
use crate::processor::commands::Command;
use crate::replication::{ha, ha_state, ha_sync, role_change};
use crate::role::control;
use crate::shard::events::{self, ShardEvent};
use crate::shard::mesh::MeshError;
use crate::shard::put::{self, OneOrMany, PutError, PutOutcome};
use crate::shard::stats::ShardStats;
use crate::shard::target::ShardRef;
use crate::shard::Shard;
use crate::startup::lifecycle;
use crate::state::clients::ConnRef;
use crate::state::subscription_groups::SubscriptionGroupConfig;

impl<'a> ShardRef<'a> {
    /// Runs `job` (named `kind`) on the target and answers its result.
    async fn run<T, F, Fut>(self, kind: &'static str, job: F) -> Result<T, MeshError>
    where
        T: Send + 'static,
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = T> + 'static,
    {
        self.from.mesh.call(self.to, kind, job).await
    }

    /// Runs `job` (named `kind`) on the target without waiting for it to finish there.
    async fn tell<F, Fut>(self, kind: &'static str, job: F)
    where
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        self.from.mesh.tell(self.to, kind, job).await
    }

    // --- Requests from clients, and the data path -----------------------------------------------

    /// Runs a client's request on the shard the request table chose for it.
    pub async fn process(
        self,
        command: Command,
        req: RemotingCommand,
        conn: ConnRef,
    ) -> Result<RemotingCommand, MeshError> {
        let (response, parked) = self
            .run("process", move |s| async move {
                let run = command.execute(&s, req, conn);
                if apache_local::enabled() {
                    long_polling::observe(run).await
                } else {
                    (run.await, false)
                }
            })
            .await?;
        // A long poll parked on the target counts for the request this shard received.
        if parked {
            long_polling::mark();
        }
        Ok(response)
    }

    /// Stores records of one queue in the owner's store (validated by the caller); on a SYNC_MASTER
    /// the answer waits for a slave's ack. One record is passed as it is (no `Vec`).
    pub async fn put(
        self,
        records: impl Into<OneOrMany<MessageRecord>>,
    ) -> Result<PutOutcome, PutError> {
        let records = records.into();
        self.run("put", move |s| async move {
            // Before the role check: a role change during the put withholds its acknowledgement.
            let term = ha::term(&s);
            let stored = put::put_here(&s, records).await?;
            Ok(ha::replicated(&s, stored, term).await)
        })
        .await?
    }

    /// The stored record at a physical offset of the target's CommitLog.
    pub async fn read_record(self, physical_offset: i64) -> Result<Option<Bytes>, String> {
        self.run("read_record", move |s| async move {
            s.store
                .read_record(physical_offset)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Messages of `topic` with `key` in the target's index.
    pub async fn query_by_key(
        self,
        topic: String,
        key: String,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Bytes>, String> {
        self.run("query_by_key", move |s| async move {
            s.store
                .query_by_key(&topic, &key, max, begin_ms, end_ms)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// A queue's smallest and largest offsets on its owner.
    pub async fn queue_bounds(self, topic: String, queue_id: i32) -> Result<(i64, i64), MeshError> {
        self.run("queue_bounds", move |s| async move {
            (
                s.store.min_offset(&topic, queue_id),
                s.store.readable_max_offset(&topic, queue_id),
            )
        })
        .await
    }

    /// A queue's max offset on its owner and the store time of its message at `offset` (0 when that
    /// message is gone or not yet written), for Apache's lag gauges.
    pub async fn queue_lag(
        self,
        topic: String,
        queue_id: i32,
        offset: i64,
    ) -> Result<(i64, i64), MeshError> {
        self.run("queue_lag", move |s| async move {
            let max = s.store.readable_max_offset(&topic, queue_id);
            let time = if offset < max && offset >= s.store.min_offset(&topic, queue_id) {
                let at = s.store.store_time_at(&topic, queue_id, offset).await;
                at.ok().flatten().unwrap_or(0).max(0)
            } else {
                0
            };
            (max, time)
        })
        .await
    }

    /// The target's tables behind Apache's metric names (`feature::metrics::apache_local`).
    pub async fn apache_metrics(self) -> Result<ApacheShardFigures, MeshError> {
        self.run(
            "apache_metrics",
            |_| async move { apache_local::snapshot() },
        )
        .await
    }

    // --- POP --------------------------------------------------------------------------------------

    /// Pops up to `want` messages of one queue on its owner.
    pub async fn pop_queue(
        self,
        req: PopRequest,
        topic: String,
        queue_id: i32,
        want: i32,
        max_bytes: usize,
    ) -> Result<QueuePop, String> {
        self.run("pop_queue", move |s| async move {
            pop::queue_pop::pop_queue(&s, &req, &topic, queue_id, want, max_bytes).await
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Peeks at up to `want` messages of one queue on its owner, past the group's pop position.
    pub async fn peek_queue(
        self,
        group: String,
        topic: String,
        queue_id: i32,
        want: i32,
    ) -> Result<Result<Vec<Bytes>, String>, MeshError> {
        self.run("peek_queue", move |s| async move {
            pop::pop_message::peek_queue(&s, &group, &topic, queue_id, want).await
        })
        .await
    }

    /// Acks one entry of a BATCH_ACK_MESSAGE on its queue's owner.
    pub async fn batch_ack_entry(
        self,
        topic: String,
        ack: protocol::body::BatchAck,
    ) -> Result<RemotingCommand, MeshError> {
        self.run("batch_ack_entry", move |s| async move {
            pop::ack::ack_entry(&s, topic, ack).await
        })
        .await
    }

    /// Whether a pop of the group would find a message on the queue now (NOTIFICATION).
    pub async fn pop_has_message(
        self,
        key: QueueKey,
        order: bool,
        attempt_id: Option<String>,
    ) -> Result<bool, MeshError> {
        self.run("pop_has_message", move |s| async move {
            pop::notification::has_message_here(&s, key, order, attempt_id).await
        })
        .await
    }

    // --- Statistics and admin figures ---------------------------------------------------------------

    /// The target's counters, store and replication figures.
    pub async fn stats(self) -> Result<ShardStats, MeshError> {
        self.run("stats", |s| async move {
            let mut stats = s.stats();
            stats.ha = ha_state::figures(&s);
            stats
        })
        .await
    }

    /// The consumer offsets the target holds: (topic@group key, queue id, offset).
    pub async fn consumer_offsets(self) -> Result<Vec<(String, i32, i64)>, MeshError> {
        self.run("consumer_offsets", |s| async move {
            s.offsets.borrow().entries()
        })
        .await
    }

    /// The topics a group has offsets for on the target.
    pub async fn group_topics(self, group: String) -> Result<Vec<String>, MeshError> {
        self.run("group_topics", move |s| async move {
            admin_stats::group_topics(&s, &group)
        })
        .await
    }

    /// Offsets of the target's queues of a topic (GET_TOPIC_STATS_INFO).
    pub async fn topic_offsets(
        self,
        topic: String,
        queues: Vec<i32>,
    ) -> Result<Result<Vec<(i32, TopicOffset)>, String>, MeshError> {
        self.run("topic_offsets", move |s| async move {
            admin_stats::topic_offsets(&s, &topic, &queues).await
        })
        .await
    }

    /// A group's offsets on the target's queues of a topic (GET_CONSUME_STATS).
    pub async fn group_offsets(
        self,
        group: String,
        topic: String,
        queues: Vec<i32>,
    ) -> Result<Result<Vec<(i32, OffsetWrapper)>, String>, MeshError> {
        self.run("group_offsets", move |s| async move {
            admin_stats::group_offsets(&s, &group, &topic, &queues).await
        })
        .await
    }

    /// Resets a group's offsets on the target's queues (INVOKE_BROKER_TO_RESET_OFFSET).
    pub async fn reset_queues(
        self,
        group: String,
        topic: String,
        targets: Vec<(i32, ResetTarget)>,
        force: bool,
    ) -> Result<Result<Vec<(i32, i64)>, String>, MeshError> {
        self.run("reset_queues", move |s| async move {
            admin_stats::reset_queues(&s, &group, &topic, &targets, force).await
        })
        .await
    }

    /// Copies a group's offsets to another group on the target (CLONE_GROUP_OFFSET).
    pub async fn clone_group_offsets(
        self,
        src: String,
        dest: String,
        topics: BTreeSet<String>,
    ) -> Result<usize, MeshError> {
        self.run("clone_group_offsets", move |s| async move {
            clone_group_offset::clone_on_shard(&s, &src, &dest, &topics)
        })
        .await
    }

    /// Drops a deleted group's offsets on the target and persists them.
    pub async fn remove_group_offsets(self, group: String) -> Result<(), MeshError> {
        self.run("remove_group_offsets", move |s| async move {
            s.offsets.borrow_mut().remove_group(&group);
            lifecycle::persist_offsets(&s).await;
        })
        .await
    }

    /// One statistics item's windows on the target (VIEW_BROKER_STATS_DATA).
    pub async fn stats_item(
        self,
        name: String,
        key: String,
        since_ms: u64,
    ) -> Result<Option<ItemWindows>, MeshError> {
        self.run("stats_item", move |_| async move {
            broker_stats::local::item_windows(&name, &key, since_ms)
        })
        .await
    }

    /// The target's slowest send, in ms.
    pub async fn put_time_max_ms(self) -> Result<u64, MeshError> {
        self.run("put_time_max_ms", |_| async {
            broker_stats::local::put_time_max_ms()
        })
        .await
    }

    /// The target's totals since this morning.
    pub async fn daily_totals(self) -> Result<DailyTotals, MeshError> {
        self.run("daily_totals", |_| async {
            broker_stats::sampler::local_daily()
        })
        .await
    }

    /// The target's rates over the sampling windows.
    pub async fn rates(self) -> Result<Rates, MeshError> {
        self.run("rates", |_| async { broker_stats::sampler::local_rates() })
            .await
    }

    /// The end of the target's CommitLog as an election should weigh it, as a shard-local offset:
    /// after a failed sync only the durable end, as the restart such a store needs drops the rest
    /// (held in memory only).
    pub async fn local_electable_offset(self) -> Result<u64, MeshError> {
        self.run("local_electable_offset", |s| async move {
            let end = if s.store.unrecovered_failure().is_some() {
                s.store.flushed_physical_offset()
            } else {
                s.store.max_physical_offset()
            };
            storage::local_of(end)
        })
        .await
    }

    // --- Metadata kept by the control shard -----------------------------------------------------------

    /// Drops a deleted topic's data and offsets on the target.
    pub async fn delete_topic(self, topic: String) -> Result<(), MeshError> {
        self.run("delete_topic", move |s| async move {
            s.store.delete_topic(&topic).await;
            s.offsets.borrow_mut().remove_topic(&topic);
        })
        .await
    }

    /// Control shard: creates a topic unless it exists; answers the config in force.
    pub async fn create_topic(self, tc: TopicConfig) -> Result<TopicConfig, String> {
        self.run("create_topic", move |s| async move {
            if !s.is_control() {
                return Err(format!("shard {} is not the control shard", s.id));
            }
            Ok(control::create_topic(&s, tc).await)
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Control shard: a subscription group's settings, created with defaults when the broker may
    /// (`autoCreateSubscriptionGroup`); `None` when it does not exist.
    pub async fn ensure_group(
        self,
        group: String,
    ) -> Result<Option<SubscriptionGroupConfig>, MeshError> {
        self.run("ensure_group", move |s| async move {
            control::ensure_group(&s, &group).await
        })
        .await
    }

    /// Applies a broadcast of the control shard to the target's copies.
    pub async fn apply_event(self, event: ShardEvent) -> Result<(), MeshError> {
        self.run(
            "apply_event",
            move |s| async move { events::apply(&s, event) },
        )
        .await
    }

    /// Applies a changed broker config on the target (the values changeable at run time).
    pub async fn apply_config(self, cfg: BrokerConfig) -> Result<(), MeshError> {
        self.run("apply_config", move |s| async move {
            crate::config::live::apply(&cfg, Some(&s.store))
        })
        .await
    }

    /// Control shard: a slave saw data of a topic it has no config for (asked for once each).
    pub async fn topic_seen(self, topic: String, queues: i32) {
        self.tell("topic_seen", move |ctl| async move {
            ha::topic_seen(&ctl, topic, queues).await
        })
        .await
    }

    // --- Clients' connections -----------------------------------------------------------------------

    /// Control shard: the connection a producer client (by client id) sent its latest heartbeat on.
    pub async fn producer_conn(self, client_id: String) -> Result<Option<ConnRef>, MeshError> {
        self.run("producer_conn", move |s| async move {
            s.control
                .as_ref()
                .and_then(|ctl| ctl.clients.borrow().producer_conn_by_client_id(&client_id))
        })
        .await
    }

    /// Control shard: a connection of shard `shard` that had registered clients closed.
    pub async fn connection_closed(self, shard: usize, conn_id: u64) {
        self.tell("connection_closed", move |s| async move {
            control::connection_closed(&s, shard, conn_id).await
        })
        .await
    }

    /// Sends a request to the client of one of the target's connections and answers the client's
    /// response (or why there is none within `timeout`).
    pub async fn call_client(
        self,
        conn_id: u64,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, String> {
        self.run("call_client", move |s| async move {
            client_calls::state(&s)
                .call_client(conn_id, cmd, timeout)
                .await
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Sends a server-initiated command to one of the target's connections.
    pub async fn notify(self, conn_id: u64, cmd: RemotingCommand) {
        self.tell("notify", move |s| async move {
            client_calls::state(&s).notify(conn_id, cmd)
        })
        .await
    }

    /// Control shard: asks the producer of a half message for its transaction's state.
    pub async fn check_transaction(
        self,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, MeshError> {
        self.run("check_transaction", move |ctl| async move {
            crate::feature::transaction::deliver_check(&ctl, cmd).await
        })
        .await
    }

    // --- Delayed messages -------------------------------------------------------------------------------

    /// Installs delay-level offsets on the target and answers its safe offsets.
    pub async fn delay_offsets(
        self,
        install: Vec<(i32, i64)>,
        settle_all: bool,
    ) -> Result<Vec<(i32, i64)>, MeshError> {
        self.run("delay_offsets", move |s| async move {
            schedule::serve_call(&s, install, settle_all).await
        })
        .await
    }

    /// Control shard: writes the delay offsets file.
    pub async fn persist_delay_offsets(self) -> Result<(), MeshError> {
        self.run("persist_delay_offsets", |s| async move {
            schedule::persist(&s, true).await
        })
        .await
    }

    /// Control shard of a slave: installs the master's delay offsets.
    pub async fn install_delay_offsets(
        self,
        json: String,
    ) -> Result<Result<usize, String>, MeshError> {
        self.run("install_delay_offsets", move |s| async move {
            schedule::install_delay_offsets_json(&s, &json).await
        })
        .await
    }

    /// The target's role-change count (controller mode).
    pub async fn ha_term(self) -> Result<u64, MeshError> {
        self.run(
            "ha_term",
            |s| async move { crate::replication::ha::term(&s) },
        )
        .await
    }

    /// The target's timer progress: (timer queue, persisted watermark), earliest pending due time.
    pub async fn timer_progress(self) -> Result<(Option<(i32, i64)>, Option<i64>), MeshError> {
        self.run("timer_progress", |s| async move {
            let p = crate::feature::timer::checkpoint::progress(&s);
            (p.persisted.get(), p.next_due.get())
        })
        .await
    }

    /// A slave's target: takes a timer queue's watermark copied from the master.
    pub async fn install_timer_watermark(
        self,
        queue_id: i32,
        watermark: i64,
        term: u64,
    ) -> Result<(), MeshError> {
        self.run("install_timer_watermark", move |s| async move {
            crate::feature::timer::install_watermark(&s, queue_id, watermark, term).await
        })
        .await
    }

    // --- Replication ---------------------------------------------------------------------------------------

    /// A slave takes the master's consumer offsets of the target's queues.
    pub async fn set_consumer_offsets(
        self,
        entries: Vec<(String, String, i32, i64)>,
    ) -> Result<(), MeshError> {
        self.run("set_consumer_offsets", move |owner| async move {
            ha_sync::set_offsets(&owner, entries)
        })
        .await
    }

    /// A slave shard learns its master's HA and remoting addresses.
    pub async fn follow_master(self, ha_addr: Option<String>, master_addr: Option<String>) {
        self.tell("follow_master", move |s| async move {
            ha_sync::set_master(&s, ha_addr, master_addr)
        })
        .await
    }

    /// The owning shard takes over a slave's replication connection accepted by shard 0.
    pub async fn adopt_slave(self, fd: OwnedFd, peer: String, hello: ::ha::wire::Handshake) {
        self.tell("adopt_slave", move |owner| async move {
            ha::adopt(&owner, fd, peer, hello)
        })
        .await
    }

    /// Controller mode: the brokerId the controllers gave this broker.
    pub async fn set_controller_id(self, broker_id: u64) {
        self.tell("set_controller_id", move |s| async move {
            role_change::controller_id_known(&s, broker_id)
        })
        .await
    }

    /// Controller mode: the target becomes master of `epoch` with this SyncStateSet.
    pub async fn become_master(self, epoch: i32, set: BTreeSet<u64>) -> Result<(), MeshError> {
        self.run("become_master", move |s| async move {
            role_change::become_master(&s, epoch, set).await
        })
        .await
    }

    /// Controller mode: the target becomes a slave of the master at `master_addr`.
    pub async fn become_slave(self, broker_id: u64, master_addr: String) -> Result<(), MeshError> {
        self.run("become_slave", move |s| async move {
            role_change::become_slave(&s, broker_id, master_addr).await
        })
        .await
    }

    /// Controller mode: the target learns its master's HA address.
    pub async fn master_ha_known(self, ha_addr: String) {
        self.tell("master_ha_known", move |s| async move {
            role_change::master_ha_known(&s, ha_addr)
        })
        .await
    }

    /// Controller mode: the target's slaves that belong in the SyncStateSet (newcomers within
    /// `join_ms`; see `ha::caught_up_slaves`).
    pub async fn caught_up_slaves(
        self,
        limit_ms: u64,
        join_ms: u64,
        members: BTreeSet<u64>,
    ) -> Result<BTreeSet<u64>, MeshError> {
        self.run("caught_up_slaves", move |s| async move {
            ha::caught_up_slaves(&s, limit_ms, join_ms, &members).await
        })
        .await
    }

    /// Controller mode: the SyncStateSet round is over; sends stop waiting for non-members.
    pub async fn end_joining(self) -> Result<(), MeshError> {
        self.run("end_joining", move |s| async move {
            role_change::end_joining(&s)
        })
        .await
    }

    /// Controller mode: the SyncStateSet the controllers accepted.
    pub async fn sync_state_set_changed(self, set: BTreeSet<u64>) -> Result<(), MeshError> {
        self.run("sync_state_set_changed", move |s| async move {
            role_change::sync_state_set_changed(&s, set)
        })
        .await
    }

    // --- Shutdown ------------------------------------------------------------------------------------------

    /// Phase 1: stop accepting, answer parked pulls, wait for requests and deliveries.
    pub async fn drain(self) -> Result<(), MeshError> {
        self.run("drain", |s| async move {
            lifecycle::drain_here(&s).await;
            schedule::quiesce(&s).await;
        })
        .await
    }

    /// Phase 2: persist offsets, flush and checkpoint the store.
    pub async fn shut_store(self) -> Result<(), MeshError> {
        self.run("shut_store", |s| async move {
            lifecycle::persist_offsets(&s).await;
            s.store.shutdown().await;
            tracing::info!("shard {}: store flushed and checkpointed", s.id);
        })
        .await
    }

    /// Phase 3: let the target's executor end.
    pub async fn exit(self) {
        self.tell("exit", |s| async move { s.exit.fire() }).await
    }
}
