//! The connections of a shard whose clients registered (heartbeat), and the requests the broker sends
//! to those clients: notifications, and calls it waits on (PUSH_REPLY_MESSAGE_TO_CLIENT,
//! GET_CONSUMER_RUNNING_INFO): the client's answer arrives on the connection as a response with the
//! request's opaque and is matched here, keyed by (connection, opaque); a closed connection fails its
//! calls at once.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel::{self, LocalSender};
use protocol::RemotingCommand;
use remoting::ResponseSink;

use crate::shard::Shard;

/// One shard's registered connections and its calls to their clients.
pub struct ClientConnections {
    /// Connections on this shard whose clients registered, for server-initiated commands.
    sinks: RefCell<HashMap<u64, ResponseSink>>,
    calls: ClientCalls,
    next_opaque: Cell<i32>,
}

impl Default for ClientConnections {
    fn default() -> Self {
        ClientConnections {
            sinks: RefCell::new(HashMap::new()),
            calls: ClientCalls::default(),
            next_opaque: Cell::new(1),
        }
    }
}

/// This shard's registered connections.
pub fn state(shard: &Shard) -> Rc<ClientConnections> {
    shard.extensions.get()
}

impl ClientConnections {
    /// Remembers a connection that sent a heartbeat, so the control shard can reach its client.
    pub fn remember(&self, conn_id: u64, sink: &ResponseSink) {
        self.sinks
            .borrow_mut()
            .entry(conn_id)
            .or_insert_with(|| sink.clone());
    }

    /// A response arrived on connection `conn_id`.
    pub fn answer(&self, conn_id: u64, response: RemotingCommand) {
        self.calls.answer(conn_id, response);
    }

    /// Connection `conn_id` closed: its calls fail now; answers whether its client had registered.
    pub fn closed(&self, conn_id: u64) -> bool {
        self.calls.connection_closed(conn_id);
        self.sinks.borrow_mut().remove(&conn_id).is_some()
    }

    /// A fresh opaque for a server-initiated request.
    fn next_opaque(&self) -> i32 {
        let v = self.next_opaque.get();
        self.next_opaque.set(v.wrapping_add(1).max(1));
        v
    }

    /// Sends a request to the client of one of this shard's registered connections and waits for
    /// the client's answer (RocketMQ's `Broker2Client.callClient`).
    pub async fn call_client(
        &self,
        conn_id: u64,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, String> {
        let sink = self.sinks.borrow().get(&conn_id).cloned();
        let Some(sink) = sink else {
            return Err(format!("connection {conn_id} is gone"));
        };
        cmd.opaque = self.next_opaque();
        self.calls.call(conn_id, &sink, cmd, timeout).await
    }

    /// Sends a server-initiated command to one of this shard's registered connections.
    pub fn notify(&self, conn_id: u64, mut cmd: RemotingCommand) {
        let sink = self.sinks.borrow().get(&conn_id).cloned();
        if let Some(sink) = sink {
            cmd.opaque = self.next_opaque();
            if sink.try_send(cmd).is_err() {
                tracing::debug!("connection {conn_id} gone or full; notification dropped");
            }
        }
    }
}

/// Calls of one shard waiting for their client's answer.
#[derive(Default)]
struct ClientCalls {
    waiting: RefCell<HashMap<(u64, i32), LocalSender<RemotingCommand>>>,
}

/// Forgets a call however it ends (answer, timeout, closed connection, dropped future).
struct Forget<'a> {
    calls: &'a ClientCalls,
    key: (u64, i32),
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.calls.waiting.borrow_mut().remove(&self.key);
    }
}

impl ClientCalls {
    /// Sends `cmd` (its opaque already chosen, unique on this shard) on connection `conn_id` and
    /// waits up to `timeout` for the client's answer.
    pub async fn call(
        &self,
        conn_id: u64,
        sink: &ResponseSink,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, String> {
        let key = (conn_id, cmd.opaque);
        let (tx, rx) = local_channel::new_bounded(1);
        self.waiting.borrow_mut().insert(key, tx);
        let _forget = Forget { calls: self, key };
        sink.try_send(cmd)
            .map_err(|e| format!("cannot send to connection {conn_id}: {e}"))?;
        remoting::with_timeout(timeout, async {
            rx.recv().await.ok_or(remoting::RemotingError::Closed)
        })
        .await
        .map_err(|e| format!("no answer from connection {conn_id}: {e}"))
    }

    /// A response arrived on connection `conn_id`: hands it to the call waiting for it, if any.
    pub fn answer(&self, conn_id: u64, response: RemotingCommand) {
        let waiter = self
            .waiting
            .borrow_mut()
            .remove(&(conn_id, response.opaque));
        if let Some(waiter) = waiter {
            // The caller may have given up meanwhile; then nobody wants it.
            let _ = waiter.try_send(response);
        }
    }

    /// Connection `conn_id` closed: its calls fail now instead of at their timeout.
    pub fn connection_closed(&self, conn_id: u64) {
        // Dropping a waiter's sender ends its `recv` with nothing.
        self.waiting.borrow_mut().retain(|(c, _), _| *c != conn_id);
    }
}
