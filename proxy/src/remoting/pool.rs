//! Connections by address, made on first use and replaced when closed; every call goes through here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::RemotingCommand;
use tokio::sync::mpsc;

use super::connection::{Connection, Inbound, RemotingError};
use protocol::signature::{sign_request, Credentials};

pub struct Pool {
    conns: Mutex<HashMap<String, Arc<Connection>>>,
    inbound: mpsc::UnboundedSender<Inbound>,
    pub timeout: Duration,
}

impl Pool {
    pub fn new(timeout: Duration, inbound: mpsc::UnboundedSender<Inbound>) -> Pool {
        Pool {
            conns: Mutex::default(),
            inbound,
            timeout,
        }
    }

    async fn connection(&self, addr: &str) -> Result<Arc<Connection>, RemotingError> {
        let live = self
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(addr)
            .filter(|c| !c.is_closed())
            .cloned();
        if let Some(c) = live {
            return Ok(c);
        }
        let c = Connection::connect(addr, self.inbound.clone()).await?;
        // Two tasks may connect at once; the later one wins and the other connection closes when
        // its last call ends.
        self.conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(addr.to_string(), c.clone());
        Ok(c)
    }

    /// Sends `cmd` to `addr` (signed with `creds` when given) and waits for the response.
    pub async fn invoke(
        &self,
        addr: &str,
        mut cmd: RemotingCommand,
        creds: Option<&Credentials>,
        timeout: Option<Duration>,
    ) -> Result<RemotingCommand, RemotingError> {
        if let Some(c) = creds {
            sign_request(&mut cmd, c);
        }
        let conn = self.connection(addr).await?;
        conn.invoke(cmd, timeout.unwrap_or(self.timeout)).await
    }

    pub async fn oneway(
        &self,
        addr: &str,
        mut cmd: RemotingCommand,
        creds: Option<&Credentials>,
    ) -> Result<(), RemotingError> {
        if let Some(c) = creds {
            sign_request(&mut cmd, c);
        }
        self.connection(addr).await?.oneway(cmd).await
    }
}
