//! Requests to the controllers (controller mode): one connection per controller, kept between
//! requests; requests that change or read the replicated state go to the raft leader, found by
//! following CONTROLLER_NOT_LEADER's `controllerLeaderAddress` or by trying each controller in turn.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use protocol::{response_code, RemotingCommand};
use remoting::Client;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Default)]
pub struct ControllerClient {
    addrs: RefCell<Vec<String>>,
    leader: RefCell<Option<String>>,
    clients: RefCell<HashMap<String, Client>>,
}

impl ControllerClient {
    pub fn set_addrs(&self, addrs: Vec<String>) {
        *self.addrs.borrow_mut() = addrs;
    }

    pub fn addrs(&self) -> Vec<String> {
        self.addrs.borrow().clone()
    }

    /// The controller leader's address, as last learned.
    pub fn leader(&self) -> Option<String> {
        self.leader.borrow().clone()
    }

    async fn client(&self, addr: &str) -> Result<Client, String> {
        let existing = self.clients.borrow().get(addr).cloned();
        if let Some(c) = existing.filter(|c| !c.is_closed()) {
            return Ok(c);
        }
        let client = Client::connect_str(addr, CONNECT_TIMEOUT)
            .await
            .map_err(|e| format!("controller {addr}: {e}"))?;
        self.clients
            .borrow_mut()
            .insert(addr.to_owned(), client.clone());
        Ok(client)
    }

    /// One request to the controller at `addr`. A request that timed out leaves the connection
    /// open: it is the one this broker heartbeats on, and the controllers take its close for this
    /// broker's death (a master's close starts an election at once). Only a failed heartbeat
    /// closes it ([`ControllerClient::reconnect`]).
    pub async fn invoke_on(
        &self,
        addr: &str,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, String> {
        let client = self.client(addr).await?;
        let result = client.invoke(cmd, CALL_TIMEOUT).await;
        result.map_err(|e| {
            if client.is_closed() || !matches!(e, remoting::RemotingError::Timeout(_)) {
                self.clients.borrow_mut().remove(addr);
            }
            format!("controller {addr}: {e}")
        })
    }

    /// Closes the connection to `addr`; the next request opens a new one. For a heartbeat that
    /// got no answer: the controller is unreachable (a partition) or stuck, and a new connection
    /// finds it again once it answers, where the old one could wait on TCP's retransmission back-off.
    pub fn reconnect(&self, addr: &str) {
        if let Some(client) = self.clients.borrow_mut().remove(addr) {
            client.close();
        }
    }

    /// A request to the raft leader: the last known leader first, then where a follower points,
    /// then every controller. The answer is the leader's (any code but CONTROLLER_NOT_LEADER).
    pub async fn invoke_leader(
        &self,
        make: impl Fn() -> RemotingCommand,
    ) -> Result<RemotingCommand, String> {
        let mut tried: Vec<String> = Vec::new();
        let mut queue: Vec<String> = self.leader().into_iter().collect();
        queue.extend(self.addrs());
        let mut last_error = "no controller address".to_owned();
        while let Some(addr) = queue.first().cloned() {
            queue.remove(0);
            if tried.contains(&addr) {
                continue;
            }
            tried.push(addr.clone());
            match self.invoke_on(&addr, make()).await {
                Ok(resp) if resp.code == response_code::CONTROLLER_NOT_LEADER => {
                    if self.leader().as_deref() == Some(addr.as_str()) {
                        *self.leader.borrow_mut() = None;
                    }
                    if let Some(hint) = resp
                        .ext("controllerLeaderAddress")
                        .filter(|a| !a.is_empty())
                    {
                        queue.insert(0, hint.to_owned());
                    }
                    last_error = format!("controller {addr} is not the leader");
                }
                Ok(resp) => {
                    *self.leader.borrow_mut() = Some(addr);
                    return Ok(resp);
                }
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }
}
