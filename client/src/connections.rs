//! A small pool of connections per broker address, used round robin so one loadgen can spread its
//! requests over several TCP connections.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use remoting::{Client, RpcHook, ServerRequestHandler};

use crate::error::ClientError;

/// Up to `size` connections per broker address, made on first use and replaced when closed.
pub struct BrokerConnections {
    size: usize,
    timeout: Duration,
    pools: RefCell<HashMap<String, Vec<Option<Client>>>>,
    next: Cell<usize>,
    rpc_hook: RefCell<Option<Rc<dyn RpcHook>>>,
    handler: RefCell<Option<Rc<dyn ServerRequestHandler>>>,
}

impl BrokerConnections {
    pub fn new(size: usize, connect_timeout: Duration) -> BrokerConnections {
        BrokerConnections {
            size: size.max(1),
            timeout: connect_timeout,
            pools: RefCell::new(HashMap::new()),
            next: Cell::new(0),
            rpc_hook: RefCell::new(None),
            handler: RefCell::new(None),
        }
    }

    /// Runs `hook` on every request of connections made from now on (e.g. `acl::AclRpcHook`).
    pub fn set_rpc_hook(&self, hook: Option<Rc<dyn RpcHook>>) {
        *self.rpc_hook.borrow_mut() = hook;
    }

    /// Hands requests the brokers send on connections made from now on (e.g. a transaction producer's
    /// CHECK_TRANSACTION_STATE) to `handler`.
    pub fn set_request_handler(&self, handler: Option<Rc<dyn ServerRequestHandler>>) {
        *self.handler.borrow_mut() = handler;
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// A connection to `addr`, the next one round robin.
    pub async fn get(&self, addr: &str) -> Result<Client, ClientError> {
        let slot = self.next.get() % self.size;
        self.next.set(self.next.get().wrapping_add(1));
        self.get_slot(addr, slot).await
    }

    /// Connection number `slot` to `addr`, connecting when it is missing or closed.
    pub async fn get_slot(&self, addr: &str, slot: usize) -> Result<Client, ClientError> {
        let slot = slot % self.size;
        let existing = self
            .pools
            .borrow()
            .get(addr)
            .and_then(|pool| pool.get(slot).cloned().flatten());
        if let Some(client) = existing.filter(|c| !c.is_closed()) {
            return Ok(client);
        }
        let socket_addr = remoting::resolve(addr)?;
        let handler = self.handler.borrow().clone();
        let client = Client::connect_with_handler(socket_addr, self.timeout, handler).await?;
        client.set_rpc_hook(self.rpc_hook.borrow().clone());
        let mut pools = self.pools.borrow_mut();
        let pool = pools
            .entry(addr.to_owned())
            .or_insert_with(|| vec![None; self.size]);
        if let Some(entry) = pool.get_mut(slot) {
            // Another task may have connected meanwhile; keep the open one.
            match entry {
                Some(other) if !other.is_closed() => return Ok(other.clone()),
                _ => *entry = Some(client.clone()),
            }
        }
        Ok(client)
    }

    /// Opens every connection to `addr` now (so the first requests don't pay for connecting).
    pub async fn connect_all(&self, addr: &str) -> Result<(), ClientError> {
        for slot in 0..self.size {
            self.get_slot(addr, slot).await?;
        }
        Ok(())
    }

    /// Drops every connection (their sockets close once in-flight requests finish).
    pub fn close_all(&self) {
        self.pools.borrow_mut().clear();
    }
}
