//! Cross-shard calls over glommio's channel mesh: a call goes to the shard that must act, its answer
//! comes back the same way, matched by a correlation id. Calls to the own shard run inline.
//! No lock or atomic is shared between shards: each side owns its half of the bounded channels.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;

use bytes::Bytes;
use glommio::channels::channel_mesh::{Receivers, Senders};
use glommio::channels::local_channel::{self, LocalSender};
use protocol::body::{DataVersion, SubscriptionData, TopicConfig};
use protocol::message::record::MessageRecord;
use protocol::RemotingCommand;
use storage::{PutError, PutOk};

use crate::shard::stats::ShardStats;
use crate::state::clients::ConnRef;

/// Work one shard asks another to do.
#[derive(Debug)]
pub enum ShardCall {
    /// Store records in the owner's store (one queue; already validated by the receiving shard).
    Put(Vec<MessageRecord>),
    /// A queue-addressed request (pull, offsets) run by the queue's owner.
    Owned {
        cmd: RemotingCommand,
        conn: ConnRef,
        local: SocketAddr,
    },
    /// A control request run by shard 0 (heartbeats, topic admin, broker-wide queries).
    Control {
        cmd: RemotingCommand,
        conn: ConnRef,
        local: SocketAddr,
    },
    /// Create a topic (to shard 0), answered with the config it has.
    CreateTopic(TopicConfig),
    /// Topic table change broadcast by shard 0.
    TopicChanged {
        upsert: Option<TopicConfig>,
        remove: Option<String>,
        version: DataVersion,
    },
    /// A consumer group's subscriptions changed (broadcast by shard 0; empty = group gone).
    GroupSubscriptions {
        group: String,
        subscriptions: Vec<SubscriptionData>,
    },
    /// Send a server-initiated command to one of this shard's connections.
    Notify { conn_id: u64, cmd: RemotingCommand },
    /// A connection of `shard` that had registered clients closed (to shard 0).
    ConnectionClosed { shard: usize, conn_id: u64 },
    /// Read the record at a physical offset of this shard.
    ReadRecord(i64),
    /// Look up messages by key in this shard's index.
    QueryByKey {
        topic: String,
        key: String,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    },
    /// This shard's counters.
    Stats,
    /// This shard's consumer offsets.
    Offsets,
    /// Install delay-level offsets (HA), then answer this shard's safe ones (`schedule`).
    DelayOffsets {
        install: Vec<(i32, i64)>,
        settle_all: bool,
    },
    /// Drop a deleted topic's data and offsets.
    DeleteTopic(String),
    /// Stop accepting connections and wait for in-flight requests (shutdown phase 1).
    Drain,
    /// Flush and checkpoint the store, persist offsets (shutdown phase 2).
    Shutdown,
    /// Let the executor end (shutdown phase 3).
    Exit,
    /// HA: serve a slave's replication connection (a descriptor duplicated for this shard).
    HaSlave { fd: i32, peer: String },
    /// HA (slave): the master's addresses as the name server gave them.
    HaMaster {
        ha_addr: Option<String>,
        master_addr: Option<String>,
    },
    /// HA (slave, to shard 0): replicated records of a topic/queue the config lacks arrived.
    HaTopicSeen { topic: String, queues: i32 },
    /// HA (slave): consumer offsets copied from the master, (group, topic, queue, offset).
    HaOffsets(Vec<(String, String, i32, i64)>),
    /// Admin statistics of queues this shard owns (`processor::admin_stats`).
    AdminStats(crate::processor::admin_stats::StatsCall),
}

/// The answer to a `ShardCall`.
#[derive(Debug)]
pub enum ShardAnswer {
    Done,
    Put(Result<Vec<PutOk>, PutError>),
    Command(Option<RemotingCommand>),
    Topic(Result<TopicConfig, String>),
    Record(Result<Option<Bytes>, String>),
    Records(Result<Vec<Bytes>, String>),
    Stats(ShardStats),
    Offsets(Vec<(String, i32, i64)>),
    /// Delay level -> safe delivery offset, for the levels a shard owns.
    DelayOffsets(Vec<(i32, i64)>),
    AdminStats(crate::processor::admin_stats::StatsAnswer),
}

/// What travels on the mesh.
#[derive(Debug)]
pub enum Envelope {
    Call {
        from: usize,
        id: u64,
        call: ShardCall,
    },
    Answer {
        id: u64,
        answer: ShardAnswer,
    },
}

/// Runs a call on this shard.
pub type CallHandler = Rc<dyn Fn(ShardCall) -> Pin<Box<dyn Future<Output = ShardAnswer>>>>;

/// This shard's end of the mesh.
pub struct Mesh {
    me: usize,
    shards: usize,
    senders: Senders<Envelope>,
    pending: RefCell<HashMap<u64, LocalSender<ShardAnswer>>>,
    next_id: Cell<u64>,
    handler: RefCell<Option<CallHandler>>,
}

impl Mesh {
    pub fn new(senders: Senders<Envelope>) -> Rc<Mesh> {
        Rc::new(Mesh {
            me: senders.peer_id(),
            shards: senders.nr_consumers(),
            senders,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(1),
            handler: RefCell::new(None),
        })
    }

    pub fn me(&self) -> usize {
        self.me
    }

    pub fn shards(&self) -> usize {
        self.shards
    }

    fn handler(&self) -> Option<CallHandler> {
        self.handler.borrow().clone()
    }

    /// Starts serving calls from other shards with `handler` (one reader task per peer).
    pub fn start(self: &Rc<Self>, mut receivers: Receivers<Envelope>, handler: CallHandler) {
        *self.handler.borrow_mut() = Some(handler);
        for (_peer, rx) in receivers.streams() {
            let mesh = Rc::downgrade(self);
            glommio::spawn_local(async move {
                while let Some(envelope) = rx.recv().await {
                    let Some(mesh) = mesh.upgrade() else {
                        return;
                    };
                    match envelope {
                        Envelope::Call { from, id, call } => {
                            let Some(handler) = mesh.handler() else {
                                continue;
                            };
                            glommio::spawn_local(async move {
                                let answer = handler(call).await;
                                if id != 0 {
                                    let _ = mesh
                                        .senders
                                        .send_to(from, Envelope::Answer { id, answer })
                                        .await;
                                }
                            })
                            .detach();
                        }
                        Envelope::Answer { id, answer } => {
                            let waiter = mesh.pending.borrow_mut().remove(&id);
                            if let Some(waiter) = waiter {
                                let _ = waiter.try_send(answer);
                            }
                        }
                    }
                }
            })
            .detach();
        }
    }

    /// Runs `call` on shard `to` and waits for its answer.
    pub async fn call(&self, to: usize, call: ShardCall) -> Result<ShardAnswer, String> {
        if to == self.me {
            let handler = self
                .handler()
                .ok_or_else(|| "shard not started".to_owned())?;
            return Ok(handler(call).await);
        }
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1).max(1));
        let (tx, rx) = local_channel::new_bounded(1);
        self.pending.borrow_mut().insert(id, tx);
        let sent = self
            .senders
            .send_to(
                to,
                Envelope::Call {
                    from: self.me,
                    id,
                    call,
                },
            )
            .await;
        if sent.is_err() {
            self.pending.borrow_mut().remove(&id);
            return Err(format!("shard {to} is not reachable"));
        }
        rx.recv()
            .await
            .ok_or_else(|| format!("shard {to} dropped the call"))
    }

    /// Sends `call` to shard `to` without waiting for an answer (runs inline for the own shard).
    pub async fn tell(&self, to: usize, call: ShardCall) {
        if to == self.me {
            if let Some(handler) = self.handler() {
                handler(call).await;
            }
            return;
        }
        if self
            .senders
            .send_to(
                to,
                Envelope::Call {
                    from: self.me,
                    id: 0,
                    call,
                },
            )
            .await
            .is_err()
        {
            tracing::warn!("shard {}: shard {to} is not reachable", self.me);
        }
    }

    /// Runs a call on every shard (this one included), answers in shard order.
    pub async fn call_all(&self, make: impl Fn() -> ShardCall) -> Vec<Result<ShardAnswer, String>> {
        let calls = (0..self.shards).map(|to| self.call(to, make()));
        join_all(calls).await
    }
}

/// Awaits futures concurrently, keeping their order.
pub async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let tasks: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = tasks.iter().map(|_| None).collect();
    let mut tasks: Vec<Option<Pin<Box<F>>>> = tasks.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (task, out) in tasks.iter_mut().zip(outputs.iter_mut()) {
            if let Some(fut) = task {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *out = Some(v);
                        *task = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
