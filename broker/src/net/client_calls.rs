//! Requests the broker sends to a client and waits on (PUSH_REPLY_MESSAGE_TO_CLIENT): the client's
//! answer arrives on the connection as a response with the request's opaque and is matched here. One
//! table per shard, keyed by (connection, opaque); a closed connection fails its calls at once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use glommio::channels::local_channel::{self, LocalSender};
use protocol::RemotingCommand;
use remoting::ResponseSink;

/// Calls of one shard waiting for their client's answer.
#[derive(Default)]
pub struct ClientCalls {
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
