//! Controller requests from brokers, admin tools and peers: decodes each header, hands the work to
//! the raft thread and turns the answer into a response (Apache's ControllerRequestProcessor).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::{request_code, response_code, RemotingCommand};
use remoting::{ConnectionContext, Handler};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::controller::{BrokerLive, Controller, NotServed};
use crate::raft::network::{RAFT_APPEND_ENTRIES, RAFT_INSTALL_SNAPSHOT, RAFT_VOTE};
use crate::replicas::{sync_state_set_body, Command, Reply};

/// Whether `code` is answered by a controller (a name server embedding one hands these over).
pub fn is_controller_code(code: i32) -> bool {
    matches!(
        code,
        request_code::BROKER_HEARTBEAT
            | request_code::CONTROLLER_ALTER_SYNC_STATE_SET
            | request_code::CONTROLLER_ELECT_MASTER
            | request_code::CONTROLLER_REGISTER_BROKER
            | request_code::CONTROLLER_GET_REPLICA_INFO
            | request_code::CONTROLLER_GET_METADATA_INFO
            | request_code::CONTROLLER_GET_SYNC_STATE_DATA
            | request_code::UPDATE_CONTROLLER_CONFIG
            | request_code::GET_CONTROLLER_CONFIG
            | request_code::CLEAN_BROKER_DATA
            | request_code::CONTROLLER_GET_NEXT_BROKER_ID
            | request_code::CONTROLLER_APPLY_BROKER_ID
            | RAFT_APPEND_ENTRIES
            | RAFT_VOTE
            | RAFT_INSTALL_SNAPSHOT
    )
}

/// Serves one executor's connections; the controller itself lives on the raft thread.
pub struct ControllerHandler {
    pub controller: Arc<Controller>,
    pub runtime: tokio::runtime::Handle,
}

fn error(request: &RemotingCommand, code: i32, remark: impl Into<String>) -> RemotingCommand {
    request.response_to(code, Some(remark.into()))
}

fn invalid(request: &RemotingCommand, remark: impl Into<String>) -> RemotingCommand {
    error(request, response_code::CONTROLLER_INVALID_REQUEST, remark)
}

/// A refusal of a bad request, as the `Err` of the helpers below (boxed: responses are large).
fn bad(request: &RemotingCommand, remark: impl Into<String>) -> Box<RemotingCommand> {
    Box::new(invalid(request, remark))
}

fn header<'a>(request: &'a RemotingCommand, key: &str) -> Result<&'a str, Box<RemotingCommand>> {
    request
        .ext(key)
        .ok_or_else(|| bad(request, format!("the header field {key} is missing")))
}

fn number<T: std::str::FromStr>(
    request: &RemotingCommand,
    key: &str,
) -> Result<T, Box<RemotingCommand>> {
    let text = header(request, key)?;
    text.trim().parse().map_err(|_| {
        bad(
            request,
            format!("the header field {key} is not a number: {text:?}"),
        )
    })
}

fn optional_number<T: std::str::FromStr>(request: &RemotingCommand, key: &str) -> Option<T> {
    request.ext(key).and_then(|v| v.trim().parse().ok())
}

fn reply_to(request: &RemotingCommand, reply: Reply) -> RemotingCommand {
    let mut response = request.response_to(reply.code, reply.remark);
    for (k, v) in &reply.header {
        response.set_ext(k, v);
    }
    if let Some(body) = reply.body {
        response.set_body(body);
    }
    response
}

fn not_served(request: &RemotingCommand, e: NotServed) -> RemotingCommand {
    match e {
        NotServed::NotLeader(leader) => {
            let mut response = error(
                request,
                response_code::CONTROLLER_NOT_LEADER,
                match &leader {
                    Some((id, addr)) => format!(
                        "The controller is not in leader state, the leader is n{id} at {addr}"
                    ),
                    None => {
                        "The controller is not in leader state, no leader is known yet".to_string()
                    }
                },
            );
            if let Some((id, addr)) = leader {
                response.set_ext("controllerLeaderId", &format!("n{id}"));
                response.set_ext("controllerLeaderAddress", &addr);
            }
            response
        }
        NotServed::Raft(e) => error(request, response_code::SYSTEM_ERROR, e),
    }
}

impl ControllerHandler {
    /// Runs `fut` on the raft thread and waits for it here.
    async fn on_raft<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, String> {
        self.runtime
            .spawn(fut)
            .await
            .map_err(|e| format!("raft task failed: {e}"))
    }

    async fn propose(&self, request: &RemotingCommand, command: Command) -> RemotingCommand {
        let controller = self.controller.clone();
        match self
            .on_raft(async move { controller.propose(command).await })
            .await
        {
            Ok(Ok(reply)) => reply_to(request, reply),
            Ok(Err(e)) => not_served(request, e),
            Err(e) => error(request, response_code::SYSTEM_ERROR, e),
        }
    }

    async fn process(&self, request: RemotingCommand, ctx: &ConnectionContext) -> RemotingCommand {
        let result = match request.code {
            request_code::BROKER_HEARTBEAT => self.heartbeat(&request, ctx),
            request_code::CONTROLLER_GET_METADATA_INFO => Ok(self.metadata(&request)),
            request_code::GET_CONTROLLER_CONFIG => Ok(request
                .response_to(response_code::SUCCESS, None)
                .with_body(self.controller.config().to_properties())),
            request_code::UPDATE_CONTROLLER_CONFIG => Ok(self.update_config(&request)),
            request_code::CONTROLLER_APPLY_BROKER_ID => self.apply_broker_id(&request).await,
            request_code::CONTROLLER_GET_NEXT_BROKER_ID => self.next_broker_id(&request).await,
            request_code::CONTROLLER_REGISTER_BROKER => self.register_broker(&request).await,
            request_code::CONTROLLER_ALTER_SYNC_STATE_SET => {
                self.alter_sync_state_set(&request).await
            }
            request_code::CONTROLLER_ELECT_MASTER => self.elect_master(&request).await,
            request_code::CONTROLLER_GET_REPLICA_INFO => self.replica_info(&request).await,
            request_code::CONTROLLER_GET_SYNC_STATE_DATA => self.sync_state_data(&request).await,
            request_code::CLEAN_BROKER_DATA => self.clean_broker_data(&request).await,
            RAFT_APPEND_ENTRIES => Ok(self
                .raft_rpc(&request, |raft, rpc| async move {
                    raft.append_entries(rpc).await
                })
                .await),
            RAFT_VOTE => Ok(self
                .raft_rpc(&request, |raft, rpc| async move { raft.vote(rpc).await })
                .await),
            RAFT_INSTALL_SNAPSHOT => Ok(self
                .raft_rpc(&request, |raft, rpc| async move {
                    raft.install_snapshot(rpc).await
                })
                .await),
            code => Ok(error(
                &request,
                response_code::REQUEST_CODE_NOT_SUPPORTED,
                format!(" request type {code} not supported"),
            )),
        };
        result.unwrap_or_else(|e| *e)
    }

    /// A raft message from a peer: decode, hand to openraft, answer with its result as JSON.
    async fn raft_rpc<Req, Resp, F, Fut>(
        &self,
        request: &RemotingCommand,
        call: F,
    ) -> RemotingCommand
    where
        Req: DeserializeOwned + Send + 'static,
        Resp: Serialize + Send + 'static,
        F: FnOnce(crate::raft::types::Raft, Req) -> Fut + Send + 'static,
        Fut: Future<Output = Resp> + Send + 'static,
    {
        let rpc: Req = match serde_json::from_slice(&request.body) {
            Ok(rpc) => rpc,
            Err(e) => return invalid(request, format!("bad raft message: {e}")),
        };
        let raft = self.controller.raft.clone();
        match self.on_raft(async move { call(raft, rpc).await }).await {
            Ok(answer) => match serde_json::to_vec(&answer) {
                Ok(body) => request
                    .response_to(response_code::SUCCESS, None)
                    .with_body(body),
                Err(e) => error(request, response_code::SYSTEM_ERROR, e.to_string()),
            },
            Err(e) => error(request, response_code::SYSTEM_ERROR, e),
        }
    }

    fn heartbeat(
        &self,
        request: &RemotingCommand,
        ctx: &ConnectionContext,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let broker_id: u64 = number(request, "brokerId")
            .map_err(|_| bad(request, "Heart beat with empty brokerId"))?;
        let broker_name = header(request, "brokerName")?;
        let default_timeout = self.controller.config().heartbeat_timeout;
        let timeout = optional_number::<u64>(request, "heartbeatTimeoutMills")
            .filter(|ms| *ms > 0)
            .map_or(default_timeout, Duration::from_millis);
        self.controller.on_heartbeat(
            broker_name,
            broker_id,
            BrokerLive {
                cluster_name: request.ext("clusterName").unwrap_or_default().to_string(),
                broker_addr: request.ext("brokerAddr").unwrap_or_default().to_string(),
                last: Instant::now(),
                timeout,
                epoch: optional_number(request, "epoch").unwrap_or(0),
                max_offset: optional_number(request, "maxOffset").unwrap_or(0),
                confirm_offset: optional_number(request, "confirmOffset").unwrap_or(0),
                election_priority: optional_number(request, "electionPriority").unwrap_or(0),
                heard_as_follower: false,
                channel: Some((ctx.local, ctx.peer)),
                channel_closed: false,
            },
        );
        Ok(request.response_to(response_code::SUCCESS, Some("Heart beat success".into())))
    }

    fn metadata(&self, request: &RemotingCommand) -> RemotingCommand {
        let config = self.controller.config();
        let mut response = request.response_to(response_code::SUCCESS, None);
        response.set_ext("group", &config.group);
        if let Some((id, addr)) = self.controller.leader() {
            response.set_ext("controllerLeaderId", &format!("n{id}"));
            response.set_ext("controllerLeaderAddress", &addr);
        }
        response.set_ext("isLeader", &self.controller.is_leader().to_string());
        let peers: Vec<String> = config
            .peers
            .iter()
            .map(|p| format!("n{}-{}", p.id, p.addr))
            .collect();
        response.set_ext("peers", &peers.join(";"));
        let m = self.controller.metrics();
        response.set_ext("elections", &m.elections.to_string());
        response.set_ext("failedElections", &m.failed_elections.to_string());
        response.set_ext("heartbeats", &m.heartbeats.to_string());
        response
    }

    fn update_config(&self, request: &RemotingCommand) -> RemotingCommand {
        let text = String::from_utf8_lossy(&request.body).to_string();
        let mut config = self.controller.config();
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let Some((key, value)) = line.split_once('=') else {
                return invalid(request, format!("expected key=value, got {line:?}"));
            };
            let key = key.trim();
            // What cannot change while running: the raft group and its storage, and the connection
            // limits (read when the listener starts).
            if matches!(
                key,
                "controllerDLegerGroup"
                    | "controllerDLegerPeers"
                    | "controllerDLegerSelfId"
                    | "controllerStorePath"
                    | "configStorePath"
                    | "raftSnapshotLogs"
                    | "serverMaxConnectionsPerShard"
                    | "serverChannelMaxIdleTimeSeconds"
                    | "serverFrameTimeoutSeconds"
                    | "serverWriteStallTimeoutSeconds"
                    | "serverMaxPendingResponseBytes"
            ) {
                return invalid(request, format!("{key} cannot be changed at runtime"));
            }
            if let Err(e) = config.set(key, value.trim()) {
                return invalid(request, e);
            }
        }
        *self
            .controller
            .config
            .write()
            .unwrap_or_else(|p| p.into_inner()) = config;
        request.response_to(response_code::SUCCESS, None)
    }

    async fn apply_broker_id(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let command = Command::ApplyBrokerId {
            cluster_name: header(request, "clusterName")?.to_string(),
            broker_name: header(request, "brokerName")?.to_string(),
            broker_id: number(request, "appliedBrokerId")?,
            register_check_code: header(request, "registerCheckCode")?.to_string(),
        };
        Ok(self.propose(request, command).await)
    }

    async fn next_broker_id(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let cluster_name = header(request, "clusterName")?.to_string();
        let broker_name = header(request, "brokerName")?.to_string();
        let controller = self.controller.clone();
        let name = broker_name.clone();
        let next = self
            .on_raft(async move {
                controller
                    .read_as_leader(|s| {
                        s.groups
                            .get(&name)
                            .map_or(crate::replicas::FIRST_BROKER_CONTROLLER_ID, |g| {
                                g.next_broker_id()
                            })
                    })
                    .await
            })
            .await;
        Ok(match next {
            Ok(Ok(id)) => {
                let mut response = request.response_to(response_code::SUCCESS, None);
                response.set_ext("clusterName", &cluster_name);
                response.set_ext("brokerName", &broker_name);
                response.set_ext("nextBrokerId", &id.to_string());
                response
            }
            Ok(Err(e)) => not_served(request, e),
            Err(e) => error(request, response_code::SYSTEM_ERROR, e),
        })
    }

    async fn register_broker(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let broker_name = header(request, "brokerName")?.to_string();
        let command = Command::RegisterBroker {
            cluster_name: header(request, "clusterName")?.to_string(),
            broker_id: number(request, "brokerId")?,
            broker_address: header(request, "brokerAddress")?.to_string(),
            alive: self.controller.alive_ids(&broker_name),
            broker_name,
        };
        Ok(self.propose(request, command).await)
    }

    async fn alter_sync_state_set(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Body {
            sync_state_set: BTreeSet<u64>,
            sync_state_set_epoch: i32,
        }
        let body: Body = serde_json::from_slice(&request.body)
            .map_err(|e| bad(request, format!("the body is not a SyncStateSet: {e}")))?;
        let broker_name = header(request, "brokerName")?.to_string();
        let command = Command::AlterSyncStateSet {
            master_broker_id: number(request, "masterBrokerId")?,
            master_epoch: number(request, "masterEpoch")?,
            sync_state_set: body.sync_state_set,
            sync_state_set_epoch: body.sync_state_set_epoch,
            alive: self.controller.alive_ids(&broker_name),
            broker_name,
        };
        Ok(self.propose(request, command).await)
    }

    async fn elect_master(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let broker_name = header(request, "brokerName")?.to_string();
        let broker_id =
            optional_number::<i64>(request, "brokerId").and_then(|id| u64::try_from(id).ok());
        let command = Command::ElectMaster {
            alive: self.controller.live_replicas(&broker_name),
            broker_id,
            designate_elect: request
                .ext("designateElect")
                .is_some_and(|v| v.trim() == "true"),
            enable_elect_unclean_master: self.controller.config().enable_elect_unclean_master,
            broker_name: broker_name.clone(),
        };
        let controller = self.controller.clone();
        let answer = self
            .on_raft(async move {
                let reply = controller.propose(command).await;
                if let Ok(r) = &reply {
                    if r.role_changed {
                        controller.notify_role_changed(&broker_name);
                    }
                }
                reply
            })
            .await;
        Ok(match answer {
            Ok(Ok(reply)) => reply_to(request, reply),
            Ok(Err(e)) => not_served(request, e),
            Err(e) => error(request, response_code::SYSTEM_ERROR, e),
        })
    }

    async fn replica_info(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let name = header(request, "brokerName")?.to_string();
        let controller = self.controller.clone();
        let group = self
            .on_raft(async move {
                controller
                    .read_as_leader(|s| s.groups.get(&name).cloned())
                    .await
            })
            .await;
        Ok(match group {
            Ok(Ok(Some(g))) => {
                let mut response = request.response_to(response_code::SUCCESS, None);
                if let Some(m) = g.master_broker_id {
                    response.set_ext("masterBrokerId", &m.to_string());
                    response.set_ext("masterAddress", g.master_address().unwrap_or_default());
                }
                response.set_ext("masterEpoch", &g.master_epoch.to_string());
                response.with_body(sync_state_set_body(
                    &g.sync_state_set,
                    g.sync_state_set_epoch,
                ))
            }
            Ok(Ok(None)) => error(
                request,
                response_code::CONTROLLER_BROKER_METADATA_NOT_EXIST,
                "Broker metadata is not existed",
            ),
            Ok(Err(e)) => not_served(request, e),
            Err(e) => error(request, response_code::SYSTEM_ERROR, e),
        })
    }

    /// GET_SYNC_STATE_DATA: the body lists brokerNames; the answer is Apache's BrokerReplicasInfo.
    async fn sync_state_data(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let names: Vec<String> = serde_json::from_slice(&request.body).map_err(|e| {
            bad(
                request,
                format!("the body is not a JSON list of broker names: {e}"),
            )
        })?;
        let controller = self.controller.clone();
        let groups = self
            .on_raft(async move {
                controller
                    .read_as_leader(|s| {
                        names
                            .iter()
                            .filter_map(|n| s.groups.get(n).cloned())
                            .collect::<Vec<_>>()
                    })
                    .await
            })
            .await;
        let groups = match groups {
            Ok(Ok(g)) => g,
            Ok(Err(e)) => return Ok(not_served(request, e)),
            Err(e) => return Ok(error(request, response_code::SYSTEM_ERROR, e)),
        };
        let mut table = serde_json::Map::new();
        for g in groups {
            let alive = self.controller.alive_ids(&g.broker_name);
            let identity = |id: &u64| {
                serde_json::json!({
                    "brokerName": g.broker_name,
                    "brokerId": id,
                    "brokerAddress": g.address_of(*id).unwrap_or_default(),
                    "alive": alive.contains(id),
                })
            };
            let in_sync: Vec<_> = g.sync_state_set.iter().map(identity).collect();
            let not_in_sync: Vec<_> = g
                .replicas
                .keys()
                .filter(|id| !g.sync_state_set.contains(id))
                .map(identity)
                .collect();
            table.insert(
                g.broker_name.clone(),
                serde_json::json!({
                    "masterBrokerId": g.master_broker_id,
                    "masterAddress": g.master_address(),
                    "masterEpoch": g.master_epoch,
                    "syncStateSetEpoch": g.sync_state_set_epoch,
                    "inSyncReplicas": in_sync,
                    "notInSyncReplicas": not_in_sync,
                }),
            );
        }
        let body = serde_json::json!({ "replicasInfoTable": table }).to_string();
        Ok(request
            .response_to(response_code::SUCCESS, None)
            .with_body(body))
    }

    async fn clean_broker_data(
        &self,
        request: &RemotingCommand,
    ) -> Result<RemotingCommand, Box<RemotingCommand>> {
        let broker_name = header(request, "brokerName")?.to_string();
        let ids: Option<Vec<u64>> = match request.ext("brokerControllerIdsToClean").map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(
                text.split(';')
                    .map(|s| s.trim().parse::<u64>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| {
                        bad(
                            request,
                            format!("brokerControllerIdsToClean: bad id list {text:?}"),
                        )
                    })?,
            ),
        };
        let clean_living = request
            .ext("isCleanLivingBroker")
            .is_some_and(|v| v.trim() == "true");
        if !clean_living {
            let alive = self.controller.alive_ids(&broker_name);
            let living: Vec<u64> = match &ids {
                Some(ids) => ids
                    .iter()
                    .copied()
                    .filter(|id| alive.contains(id))
                    .collect(),
                None => alive,
            };
            if !living.is_empty() {
                return Ok(error(
                    request,
                    response_code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                    format!("Broker {living:?} of {broker_name} are still alive, clean broker data failed"),
                ));
            }
        }
        Ok(self
            .propose(
                request,
                Command::CleanBrokerData {
                    broker_name,
                    broker_ids: ids,
                },
            )
            .await)
    }
}

impl Handler for ControllerHandler {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move { Some(self.process(request, &ctx).await) })
    }

    /// A broker's connection closed: handed to the raft thread, which may elect at once.
    fn on_close(&self, ctx: &ConnectionContext) {
        let controller = self.controller.clone();
        let channel = (ctx.local, ctx.peer);
        self.runtime
            .spawn(async move { controller.on_channel_close(channel) });
    }
}
