//! Name-server lookups: GET_ROUTEINFO_BY_TOPIC over one kept connection, trying each configured
//! address in turn when one fails.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::time::Duration;

use protocol::body::{from_json, ClusterInfo, TopicRouteData};
use protocol::request_code;
use protocol::ExtFields;
use remoting::Client;

use crate::error::ClientError;
use crate::request::{expect_success, request};

/// Talks to one of several name servers (`"host:port;host:port"`, like `namesrvAddr`).
pub struct NameServer {
    addrs: Vec<SocketAddr>,
    current: RefCell<Option<Client>>,
    next_addr: Cell<usize>,
    timeout: Duration,
}

/// Parses a `namesrvAddr` list (`;` or `,` separated) into socket addresses.
pub fn parse_addr_list(list: &str) -> Result<Vec<SocketAddr>, ClientError> {
    let addrs = list
        .split([';', ','])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| remoting::resolve(a).map_err(ClientError::from))
        .collect::<Result<Vec<_>, _>>()?;
    if addrs.is_empty() {
        return Err(ClientError::Invalid(format!(
            "no name server address in {list:?}"
        )));
    }
    Ok(addrs)
}

impl NameServer {
    pub fn new(addrs: Vec<SocketAddr>, timeout: Duration) -> NameServer {
        NameServer {
            addrs,
            current: RefCell::new(None),
            next_addr: Cell::new(0),
            timeout,
        }
    }

    /// From a `namesrvAddr` string.
    pub fn from_list(list: &str, timeout: Duration) -> Result<NameServer, ClientError> {
        Ok(NameServer::new(parse_addr_list(list)?, timeout))
    }

    async fn connection(&self) -> Result<Client, ClientError> {
        let existing = self.current.borrow().clone();
        if let Some(client) = existing.filter(|c| !c.is_closed()) {
            return Ok(client);
        }
        let mut last_error = None;
        for _ in 0..self.addrs.len() {
            let index = self.next_addr.get();
            self.next_addr.set(index.wrapping_add(1));
            let Some(addr) = self.addrs.get(index % self.addrs.len().max(1)) else {
                break;
            };
            match Client::connect(*addr, self.timeout).await {
                Ok(client) => {
                    *self.current.borrow_mut() = Some(client.clone());
                    return Ok(client);
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.map_or_else(
            || ClientError::Invalid("no name server address".into()),
            Into::into,
        ))
    }

    /// Sends a request to a name server; a connection failure moves on to the next address once.
    pub async fn invoke(
        &self,
        cmd: protocol::RemotingCommand,
    ) -> Result<protocol::RemotingCommand, ClientError> {
        let client = self.connection().await?;
        match client.invoke(cmd.clone(), self.timeout).await {
            Ok(resp) => Ok(resp),
            Err(first) => {
                *self.current.borrow_mut() = None;
                if self.addrs.len() < 2 {
                    return Err(first.into());
                }
                let client = self.connection().await?;
                Ok(client.invoke(cmd, self.timeout).await?)
            }
        }
    }

    /// The route of `topic` (TOPIC_NOT_EXIST comes back as `ClientError::Response { code: 17, .. }`).
    pub async fn topic_route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        let mut fields = ExtFields::new();
        fields.insert("topic", topic);
        let resp = self
            .invoke(request(request_code::GET_ROUTEINFO_BY_TOPIC, fields))
            .await?;
        let resp = expect_success(resp)?;
        if resp.body.is_empty() {
            return Err(ClientError::NoRoute(topic.to_owned()));
        }
        Ok(from_json(&resp.body)?)
    }

    /// Every broker group the name servers know (GET_BROKER_CLUSTER_INFO).
    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        let resp = self
            .invoke(request(
                request_code::GET_BROKER_CLUSTER_INFO,
                ExtFields::new(),
            ))
            .await?;
        Ok(from_json(&expect_success(resp)?.body)?)
    }

    /// Creates (or updates) `topic` with `queues` read and write queues on every master of every
    /// cluster (or only of `cluster`), then waits up to `wait` until the name server routes it.
    pub async fn create_topic(
        &self,
        topic: &str,
        queues: i32,
        cluster: Option<&str>,
        wait: Duration,
    ) -> Result<TopicRouteData, ClientError> {
        let info = self.cluster_info().await?;
        let masters: Vec<String> = info
            .broker_addr_table
            .values()
            .filter(|b| match cluster {
                Some(c) => b.cluster == c,
                None => true,
            })
            .filter_map(|b| b.master_addr().map(str::to_owned))
            .collect();
        if masters.is_empty() {
            return Err(ClientError::NoRoute(format!(
                "{topic}: no broker master registered"
            )));
        }
        for addr in &masters {
            let client = Client::connect(remoting::resolve(addr)?, self.timeout).await?;
            crate::broker_api::create_topic(&client, topic, queues, self.timeout).await?;
        }
        let deadline = std::time::Instant::now() + wait;
        loop {
            match self.topic_route(topic).await {
                Ok(route) if route.queue_datas.len() >= masters.len() => return Ok(route),
                Ok(_) | Err(ClientError::Response { .. })
                    if std::time::Instant::now() < deadline =>
                {
                    glommio::timer::sleep(Duration::from_millis(100)).await;
                }
                Ok(_) => return Err(ClientError::NoRoute(topic.to_owned())),
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lists_parse() {
        let addrs = parse_addr_list("127.0.0.1:9876; 127.0.0.2:9877,").unwrap();
        assert_eq!(
            addrs,
            vec![
                "127.0.0.1:9876".parse().unwrap(),
                "127.0.0.2:9877".parse().unwrap()
            ]
        );
        assert!(parse_addr_list(" ; ").is_err());
        assert!(parse_addr_list("no-port").is_err());
    }
}
