//! `loadgen null-broker`: a name server and broker stand-in on one port that answers at once. Sends
//! get SUCCESS (or an injected error code every Nth), pulls get synthesized records, so one can see
//! how much load loadgen itself can push and test it without a real broker.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::FutureExt;
use glommio::net::TcpListener;
use protocol::header::{
    pull_sys_flag, CommandHeader, GetMaxOffsetRequestHeader, PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader, SendMessageRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use protocol::message::record::{patch_offsets, MessageRecord};
use protocol::message::{batch, msgid};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{ConnectionContext, Handler};

use crate::cli::NullBrokerArgs;
use crate::payload::{unix_micros, STAMP_LEN, STAMP_MAGIC};
use crate::run::placement;

/// Requests one connection may have in flight.
const MAX_IN_FLIGHT: usize = 4096;
/// Most records one pull returns.
const MAX_PULL_RECORDS: i64 = 1024;
/// Longest a pull is held waiting for new messages.
const MAX_HOLD: Duration = Duration::from_secs(5);

/// One executor's stand-in state.
pub struct NullBroker {
    args: NullBrokerArgs,
    route_body: Bytes,
    store_host: SocketAddr,
    sends: Cell<u64>,
    physical_offset: Cell<i64>,
    /// Messages accepted per (topic, queueId).
    sent: RefCell<HashMap<(String, i32), i64>>,
    committed: RefCell<HashMap<(String, String, i32), i64>>,
}

/// The route of every topic: one broker at `addr`, as the Java name server writes it (unquoted
/// integer keys in brokerAddrs).
pub fn route_json(broker_name: &str, addr: &str, queues: i32) -> String {
    let name = serde_json::to_string(broker_name).unwrap_or_else(|_| "\"null-broker\"".into());
    let addr = serde_json::to_string(addr).unwrap_or_else(|_| "\"\"".into());
    format!(
        "{{\"brokerDatas\":[{{\"brokerAddrs\":{{0:{addr}}},\"brokerName\":{name},\"cluster\":\"NullCluster\",\"enableActingMaster\":false}}],\"filterServerTable\":{{}},\"queueDatas\":[{{\"brokerName\":{name},\"perm\":6,\"readQueueNums\":{queues},\"topicSysFlag\":0,\"writeQueueNums\":{queues}}}]}}"
    )
}

impl NullBroker {
    pub fn new(args: NullBrokerArgs, advertised: SocketAddr) -> NullBroker {
        let route_body = Bytes::from(route_json(
            &args.broker_name,
            &advertised.to_string(),
            args.queues.max(1),
        ));
        NullBroker {
            args,
            route_body,
            store_host: advertised,
            sends: Cell::new(0),
            physical_offset: Cell::new(0),
            sent: RefCell::new(HashMap::new()),
            committed: RefCell::new(HashMap::new()),
        }
    }

    fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        let sent = self
            .sent
            .borrow()
            .get(&(topic.to_owned(), queue_id))
            .copied()
            .unwrap_or(0);
        self.args.backlog.max(0).saturating_add(sent)
    }

    fn on_send(&self, req: &RemotingCommand) -> RemotingCommand {
        let n = self.sends.get().wrapping_add(1);
        self.sends.set(n);
        if n.checked_rem(self.args.fail_every) == Some(0) {
            return req.response_to(
                self.args.fail_code,
                Some("null-broker: injected failure".into()),
            );
        }
        let header = match SendMessageRequestHeader::parse(req.code, &req.ext_fields) {
            Ok(h) => h,
            Err(e) => return req.response_to(response_code::SYSTEM_ERROR, Some(e.to_string())),
        };
        let count = if header.is_batch(req.code) {
            match batch::decode(&req.body) {
                Ok(entries) => entries.len() as i64,
                Err(e) => {
                    return req.response_to(response_code::MESSAGE_ILLEGAL, Some(e.to_string()))
                }
            }
        } else {
            1
        };
        let queue_offset = {
            let mut sent = self.sent.borrow_mut();
            let slot = sent
                .entry((header.topic.clone(), header.queue_id))
                .or_insert(0);
            let first = self.args.backlog.max(0).saturating_add(*slot);
            *slot = slot.saturating_add(count);
            first
        };
        let physical = self.physical_offset.get();
        self.physical_offset
            .set(physical.saturating_add(req.body.len() as i64));
        req.response_to(response_code::SUCCESS, None)
            .with_ext("msgId", &msgid::offset_msg_id(self.store_host, physical))
            .with_ext("queueId", &header.queue_id.to_string())
            .with_ext("queueOffset", &queue_offset.to_string())
    }

    /// `n` records of the queue from `offset`, bodies stamped now (so e2e latency here is transport only).
    fn records(&self, topic: &str, queue_id: i32, offset: i64, n: i64) -> Result<Bytes, String> {
        let mut body = BytesMut::with_capacity(self.args.pull_body_size);
        if self.args.pull_body_size >= STAMP_LEN {
            body.put_slice(STAMP_MAGIC);
            body.put_u64(unix_micros());
        }
        body.resize(self.args.pull_body_size, b'n');
        let now_ms = i64::try_from(unix_micros() / 1000).unwrap_or(0);
        let template = MessageRecord {
            queue_id,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: 0,
            born_timestamp: now_ms,
            born_host: self.store_host,
            store_timestamp: now_ms,
            store_host: self.store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: body.freeze(),
            topic: topic.to_owned(),
            properties: String::new(),
        }
        .to_vec()
        .map_err(|e| e.to_string())?;
        let mut out = BytesMut::with_capacity(template.len().saturating_mul(n.max(0) as usize));
        for i in 0..n {
            let start = out.len();
            out.put_slice(&template);
            let queue_offset = offset.saturating_add(i);
            let physical = queue_offset.saturating_mul(template.len() as i64);
            if let Some(record) = out.get_mut(start..) {
                patch_offsets(record, queue_offset, physical).map_err(|e| e.to_string())?;
            }
        }
        Ok(out.freeze())
    }

    async fn on_pull(&self, req: &RemotingCommand) -> RemotingCommand {
        let header = match PullMessageRequestHeader::from_ext_fields(&req.ext_fields) {
            Ok(h) => h,
            Err(e) => return req.response_to(response_code::SYSTEM_ERROR, Some(e.to_string())),
        };
        let (topic, queue_id) = (header.topic.as_str(), header.queue_id);
        let offset = header.queue_offset.max(0);
        if header.sys_flag & pull_sys_flag::SUSPEND != 0
            && offset >= self.max_offset(topic, queue_id)
        {
            let hold =
                Duration::from_millis(u64::try_from(header.suspend_timeout_millis).unwrap_or(0))
                    .min(MAX_HOLD);
            let until = Instant::now() + hold;
            while Instant::now() < until && offset >= self.max_offset(topic, queue_id) {
                glommio::timer::sleep(Duration::from_millis(1)).await;
            }
        }
        let max = self.max_offset(topic, queue_id);
        let n = (max - offset)
            .min(i64::from(header.max_msg_nums.max(1)))
            .min(MAX_PULL_RECORDS);
        let response = if n > 0 {
            match self.records(topic, queue_id, offset, n) {
                Ok(body) => req
                    .response_to(response_code::SUCCESS, None)
                    .with_body(body),
                Err(e) => return req.response_to(response_code::SYSTEM_ERROR, Some(e)),
            }
        } else {
            req.response_to(response_code::PULL_NOT_FOUND, Some("no new message".into()))
        };
        response
            .with_ext("suggestWhichBrokerId", "0")
            .with_ext("nextBeginOffset", &(offset + n.max(0)).to_string())
            .with_ext("minOffset", "0")
            .with_ext("maxOffset", &max.to_string())
    }

    async fn answer(&self, req: RemotingCommand) -> RemotingCommand {
        match req.code {
            request_code::SEND_MESSAGE
            | request_code::SEND_MESSAGE_V2
            | request_code::SEND_BATCH_MESSAGE => self.on_send(&req),
            request_code::PULL_MESSAGE => self.on_pull(&req).await,
            request_code::GET_ROUTEINFO_BY_TOPIC => req
                .response_to(response_code::SUCCESS, None)
                .with_body(self.route_body.clone()),
            request_code::HEART_BEAT | request_code::UNREGISTER_CLIENT => {
                req.response_to(response_code::SUCCESS, None)
            }
            request_code::GET_MAX_OFFSET => {
                match GetMaxOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
                    Ok(h) => req
                        .response_to(response_code::SUCCESS, None)
                        .with_ext("offset", &self.max_offset(&h.topic, h.queue_id).to_string()),
                    Err(e) => req.response_to(response_code::SYSTEM_ERROR, Some(e.to_string())),
                }
            }
            request_code::GET_MIN_OFFSET => req
                .response_to(response_code::SUCCESS, None)
                .with_ext("offset", "0"),
            request_code::UPDATE_CONSUMER_OFFSET => {
                match UpdateConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
                    Ok(h) => {
                        self.committed
                            .borrow_mut()
                            .insert((h.consumer_group, h.topic, h.queue_id), h.commit_offset);
                        req.response_to(response_code::SUCCESS, None)
                    }
                    Err(e) => req.response_to(response_code::SYSTEM_ERROR, Some(e.to_string())),
                }
            }
            request_code::QUERY_CONSUMER_OFFSET => {
                match QueryConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
                    Ok(h) => {
                        let found = self
                            .committed
                            .borrow()
                            .get(&(h.consumer_group, h.topic, h.queue_id))
                            .copied();
                        match found {
                            Some(offset) => req
                                .response_to(response_code::SUCCESS, None)
                                .with_ext("offset", &offset.to_string()),
                            None => req.response_to(
                                response_code::QUERY_NOT_FOUND,
                                Some("no committed offset".into()),
                            ),
                        }
                    }
                    Err(e) => req.response_to(response_code::SYSTEM_ERROR, Some(e.to_string())),
                }
            }
            other => req.response_to(
                response_code::REQUEST_CODE_NOT_SUPPORTED,
                Some(format!("null-broker does not support request code {other}")),
            ),
        }
    }
}

impl Handler for NullBroker {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move { Some(self.answer(request).await) })
    }
}

/// The address clients are told to use (a wildcard listen address becomes loopback).
fn advertised(bound: SocketAddr) -> SocketAddr {
    if bound.ip().is_unspecified() {
        SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), bound.port())
    } else {
        bound
    }
}

async fn accept_loop(listener: TcpListener, broker: Rc<NullBroker>) {
    loop {
        match listener.accept().await {
            Ok(stream) => {
                let broker = broker.clone();
                glommio::spawn_local(async move {
                    if let Err(e) = remoting::serve_connection(stream, broker, MAX_IN_FLIGHT).await
                    {
                        tracing::debug!("connection ended: {e}");
                    }
                })
                .detach();
            }
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn serve_executor(
    args: NullBrokerArgs,
    addr: SocketAddr,
    bound_tx: Option<std::sync::mpsc::Sender<Result<SocketAddr, String>>>,
) {
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            if let Some(tx) = bound_tx {
                let _ = tx.send(Err(format!("cannot listen on {addr}: {e}")));
            } else {
                eprintln!("null-broker: cannot listen on {addr}: {e}");
            }
            return;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    if let Some(tx) = bound_tx {
        let _ = tx.send(Ok(bound));
    }
    let exit_after = args.exit_after;
    let broker = Rc::new(NullBroker::new(args, advertised(bound)));
    let serve = accept_loop(listener, broker);
    match exit_after {
        Some(limit) => {
            serve
                .or(async move {
                    glommio::timer::sleep(limit).await;
                })
                .await
        }
        None => serve.await,
    }
}

/// Runs the stand-in until killed (or `--exit-after`). Prints `null-broker listening on ADDR` first.
pub fn serve(args: NullBrokerArgs) -> Result<(), String> {
    let addr = remoting::resolve(&args.listen).map_err(|e| e.to_string())?;
    let threads = args.threads.max(1);
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let first = {
        let own = args.clone();
        LocalExecutorSpawn::spawn(&args, 0, move || serve_executor(own, addr, Some(bound_tx)))?
    };
    let bound = bound_rx
        .recv()
        .map_err(|_| "null-broker executor ended before listening".to_owned())??;
    let mut handles = vec![first];
    // The other executors share the port the first one got (SO_REUSEPORT).
    for index in 1..threads {
        let own = args.clone();
        handles.push(LocalExecutorSpawn::spawn(&args, index, move || {
            serve_executor(own, bound, None)
        })?);
    }
    println!("null-broker listening on {}", advertised(bound));
    use std::io::Write;
    let _ = std::io::stdout().flush();
    for handle in handles {
        handle.join().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Starts one executor thread of the stand-in.
struct LocalExecutorSpawn;

impl LocalExecutorSpawn {
    fn spawn<F, Fut>(
        args: &NullBrokerArgs,
        index: usize,
        make: F,
    ) -> Result<glommio::ExecutorJoinHandle<()>, String>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        glommio::LocalExecutorBuilder::new(placement(args.first_cpu, index))
            .name(&format!("null-broker-{index}"))
            .spawn(make)
            .map_err(|e| format!("cannot start executor {index}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::{from_json, TopicRouteData};

    #[test]
    fn the_route_uses_java_style_keys_and_parses() {
        let json = route_json("nb", "127.0.0.1:1234", 4);
        assert!(json.contains("{0:\"127.0.0.1:1234\"}"), "{json}");
        let route: TopicRouteData = from_json(json.as_bytes()).unwrap();
        assert_eq!(route.broker_datas[0].master_addr(), Some("127.0.0.1:1234"));
        assert_eq!(route.queue_datas[0].write_queue_nums, 4);
    }
}
