//! The connections a command uses: the name servers (each one, for changes that must reach all of
//! them) and brokers by address, with one-call helpers for the requests mqadmin sends.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use client::acl::{AclRpcHook, Credentials};
use client::request::{expect_success, request};
use client::{ClientError, NameServer};
use protocol::body::{
    from_fastjson, from_json, ClusterInfo, KVTable, MessageQueue, TopicRouteData,
};
use protocol::header::{CommandHeader, SearchOffsetRequestHeader, SearchOffsetResponseHeader};
use protocol::{ExtFields, RemotingCommand};
use remoting::Client;
use serde_json::Value;

/// The credentials every `Admin` of this process signs with unless told otherwise (set once by the
/// `mqadmin` binary from `credentials::from_environment`).
static DEFAULT_CREDENTIALS: std::sync::OnceLock<Option<Credentials>> = std::sync::OnceLock::new();

/// Sets the process's default credentials (the first call wins).
pub fn set_default_credentials(credentials: Option<Credentials>) {
    let _ = DEFAULT_CREDENTIALS.set(credentials);
}

/// Name servers and a timeout, shared by every step of a command.
pub struct Admin {
    pub namesrv_addrs: Vec<SocketAddr>,
    pub namesrv: NameServer,
    pub timeout: Duration,
    /// Signs every request to brokers and name servers when set (brokers with plain ACL on).
    pub credentials: Option<Credentials>,
}

impl Admin {
    pub fn new(namesrv_list: &str, timeout: Duration) -> Result<Admin, ClientError> {
        let addrs = client::namesrv::parse_addr_list(namesrv_list)?;
        Ok(Admin {
            namesrv: NameServer::new(addrs.clone(), timeout),
            namesrv_addrs: addrs,
            timeout,
            credentials: DEFAULT_CREDENTIALS.get().cloned().flatten(),
        })
    }

    /// The same, signing its requests with `credentials`.
    pub fn with_credentials(mut self, credentials: Option<Credentials>) -> Admin {
        self.credentials = credentials;
        self
    }

    /// A new connection (to a broker, `host:port`), signing when credentials are set.
    async fn connect(&self, addr: SocketAddr) -> Result<Client, ClientError> {
        let client = Client::connect(addr, self.timeout).await?;
        if let Some(credentials) = &self.credentials {
            client.set_rpc_hook(Some(Rc::new(AclRpcHook {
                credentials: credentials.clone(),
            })));
        }
        Ok(client)
    }

    /// A new connection to a broker (`host:port`).
    pub async fn broker(&self, addr: &str) -> Result<Client, ClientError> {
        self.connect(remoting::resolve(addr)?).await
    }

    /// Sends `cmd` to a broker and expects SUCCESS.
    pub async fn call(
        &self,
        addr: &str,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        let client = self.broker(addr).await?;
        expect_success(client.invoke(cmd, self.timeout).await?)
    }

    /// Sends `cmd` to every name server (one after the other), expecting SUCCESS from each.
    pub async fn call_every_namesrv(
        &self,
        cmd: &RemotingCommand,
    ) -> Vec<(SocketAddr, Result<(), ClientError>)> {
        self.invoke_every_namesrv(cmd)
            .await
            .into_iter()
            .map(|(addr, r)| (addr, r.map(|_| ())))
            .collect()
    }

    /// Sends `cmd` to every name server (one after the other); each one's SUCCESS response or error.
    pub async fn invoke_every_namesrv(
        &self,
        cmd: &RemotingCommand,
    ) -> Vec<(SocketAddr, Result<RemotingCommand, ClientError>)> {
        let mut results = Vec::new();
        for addr in &self.namesrv_addrs {
            let result = async {
                let client = self.connect(*addr).await?;
                expect_success(client.invoke(cmd.clone(), self.timeout).await?)
            }
            .await;
            results.push((*addr, result));
        }
        results
    }

    /// The offset of the first message of a queue stored at or after `timestamp`
    /// (SEARCH_OFFSET_BY_TIMESTAMP).
    pub async fn search_offset(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
    ) -> Result<i64, ClientError> {
        let header = SearchOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            timestamp,
            boundary_type: None,
        };
        let resp = self
            .call(
                addr,
                request(
                    protocol::request_code::SEARCH_OFFSET_BY_TIMESTAMP,
                    header.to_ext_fields(),
                ),
            )
            .await?;
        Ok(SearchOffsetResponseHeader::from_ext_fields(&resp.ext_fields)?.offset)
    }

    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        self.namesrv.cluster_info().await
    }

    pub async fn route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        self.namesrv.topic_route(topic).await
    }

    /// Master addresses of one cluster (or of every cluster), by broker name.
    pub async fn masters(
        &self,
        cluster: Option<&str>,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let info = self.cluster_info().await?;
        let masters: Vec<(String, String)> = info
            .broker_addr_table
            .values()
            .filter(|b| cluster.is_none() || cluster == Some(b.cluster.as_str()))
            .filter_map(|b| {
                b.master_addr()
                    .map(|a| (b.broker_name.clone(), a.to_owned()))
            })
            .collect();
        if masters.is_empty() {
            return Err(ClientError::Invalid(match cluster {
                Some(c) => format!("cluster {c} has no registered master"),
                None => "no broker master is registered".into(),
            }));
        }
        Ok(masters)
    }

    /// Master addresses of one cluster (or of every cluster).
    pub async fn master_addrs(&self, cluster: Option<&str>) -> Result<Vec<String>, ClientError> {
        Ok(self
            .masters(cluster)
            .await?
            .into_iter()
            .map(|(_, a)| a)
            .collect())
    }

    /// Every address (masters and slaves) of one cluster, as (broker name, broker id, address).
    pub async fn cluster_brokers(
        &self,
        cluster: &str,
    ) -> Result<Vec<(String, i64, String)>, ClientError> {
        let info = self.cluster_info().await?;
        let mut out = Vec::new();
        for b in info
            .broker_addr_table
            .values()
            .filter(|b| b.cluster == cluster)
        {
            for (id, addr) in &b.broker_addrs {
                out.push((b.broker_name.clone(), *id, addr.clone()));
            }
        }
        if out.is_empty() {
            return Err(ClientError::Invalid(format!(
                "cluster {cluster} has no registered broker"
            )));
        }
        Ok(out)
    }

    /// GET_BROKER_RUNTIME_INFO of one broker.
    pub async fn runtime_info(&self, addr: &str) -> Result<KVTable, ClientError> {
        let resp = self
            .call(
                addr,
                request(
                    protocol::request_code::GET_BROKER_RUNTIME_INFO,
                    ExtFields::new(),
                ),
            )
            .await?;
        Ok(from_json(&resp.body)?)
    }

    /// The addresses a `-b`/`-c` target names: the broker itself (by address, or by name: every
    /// shard-broker of a process), or every master of the cluster.
    pub async fn target_addrs(
        &self,
        broker: Option<&str>,
        cluster: Option<&str>,
    ) -> Result<Vec<String>, ClientError> {
        match (broker, cluster) {
            // A broker name (a process of shard-brokers stands for all of them).
            (Some(b), _) if is_broker_name(b) => self.resolve_broker_name(b.trim()).await,
            (Some(b), _) => Ok(vec![b.to_owned()]),
            (None, Some(c)) => self.master_addrs(Some(c)).await,
            (None, None) => Err(ClientError::Invalid(
                "give -b brokerAddr or -c clusterName".into(),
            )),
        }
    }

    /// A client's answer to GET_CONSUMER_RUNNING_INFO (ConsumerRunningInfo), as JSON with its queue
    /// table keyed by MessageQueue JSON text.
    pub async fn running_info(
        &self,
        addr: &str,
        group: &str,
        client_id: &str,
        jstack: bool,
    ) -> Result<Value, ClientError> {
        let mut fields = ExtFields::new();
        fields.insert("consumerGroup", group);
        fields.insert("clientId", client_id);
        fields.insert("jstackEnable", if jstack { "true" } else { "false" });
        let resp = self
            .call(
                addr,
                request(protocol::request_code::GET_CONSUMER_RUNNING_INFO, fields),
            )
            .await?;
        Ok(from_fastjson(&resp.body)?)
    }
}

/// The queues a running info's `mqTable` holds, with each one's ProcessQueueInfo.
pub fn held_queues(info: &Value) -> Vec<(MessageQueue, Value)> {
    let mut out: Vec<(MessageQueue, Value)> = info
        .get("mqTable")
        .and_then(Value::as_object)
        .map(|t| {
            t.iter()
                .filter_map(|(k, v)| Some((serde_json::from_str(k).ok()?, v.clone())))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether a `-b` value names a broker rather than giving its address (`host:port`); what a name
/// stands for: `Admin::resolve_broker_name` (broker_names.rs).
pub fn is_broker_name(value: &str) -> bool {
    !value.contains(':')
}
