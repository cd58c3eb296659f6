//! Per-connection limits against slow and hostile peers (in-flight requests, buffered response bytes,
//! write stalls, idleness, frames that never complete) and a per-executor cap on open connections.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The defaults of the servers' connection-limit keys (RocketMQ's names and values), shared by the
/// broker, the name server and the controller.
pub mod defaults {
    /// `serverMaxConnectionsPerShard`.
    pub const MAX_CONNECTIONS: usize = 10_000;
    /// `serverChannelMaxIdleTimeSeconds`.
    pub const IDLE_SECONDS: u64 = 120;
    /// `serverFrameTimeoutSeconds`.
    pub const FRAME_TIMEOUT_SECONDS: u64 = 60;
    /// `serverWriteStallTimeoutSeconds`.
    pub const WRITE_STALL_SECONDS: u64 = 30;
    /// `serverMaxPendingResponseBytes`.
    pub const MAX_PENDING_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
}

/// What one connection may hold and how long it may dawdle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Requests handled at once; beyond this the connection is not read (back-pressure).
    pub max_in_flight: usize,
    /// Encoded response bytes waiting to be written; beyond this handlers wait and reading pauses.
    pub max_pending_response_bytes: u64,
    /// A write the peer does not take within this closes the connection (it stopped reading).
    pub write_stall_timeout: Option<Duration>,
    /// No request read, no response written and none in flight for this long closes the connection.
    pub idle_timeout: Option<Duration>,
    /// A frame must arrive whole within this from its first byte (against slowloris).
    pub frame_timeout: Option<Duration>,
}

impl ConnectionLimits {
    /// `max_in_flight` with the defaults below for the rest: 64 MiB of pending responses, a 30 s write
    /// stall limit, 60 s to complete a frame, no idle limit.
    pub fn new(max_in_flight: usize) -> Self {
        ConnectionLimits {
            max_in_flight: max_in_flight.max(1),
            max_pending_response_bytes: 64 * 1024 * 1024,
            write_stall_timeout: Some(Duration::from_secs(30)),
            idle_timeout: None,
            frame_timeout: Some(Duration::from_secs(60)),
        }
    }

    /// From the servers' config keys (the broker's names, also the name server's and the controller's):
    /// `serverChannelMaxIdleTimeSeconds`, `serverFrameTimeoutSeconds` and
    /// `serverWriteStallTimeoutSeconds` in seconds, 0 for no limit; `serverMaxPendingResponseBytes`,
    /// at least 64 KiB so that a response of any size can still be queued.
    pub fn from_keys(
        max_in_flight: usize,
        idle_seconds: u64,
        frame_timeout_seconds: u64,
        write_stall_seconds: u64,
        max_pending_response_bytes: u64,
    ) -> Self {
        let seconds = |v: u64| (v > 0).then(|| Duration::from_secs(v));
        ConnectionLimits {
            max_in_flight: max_in_flight.max(1),
            max_pending_response_bytes: max_pending_response_bytes.max(64 * 1024),
            write_stall_timeout: seconds(write_stall_seconds),
            idle_timeout: seconds(idle_seconds),
            frame_timeout: seconds(frame_timeout_seconds),
        }
    }

    /// How often the connection's watchdog looks at the clocks: a quarter of the shortest limit,
    /// between 10 ms and 1 s; `None` when there is nothing to watch.
    pub(crate) fn watch_every(&self) -> Option<Duration> {
        [self.idle_timeout, self.frame_timeout]
            .into_iter()
            .flatten()
            .min()
            .map(|d| (d / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)))
    }
}

/// Counts the open connections of one executor and refuses past a maximum.
#[derive(Debug)]
pub struct ConnectionGate {
    max: usize,
    open: Rc<Cell<usize>>,
}

/// Holds one slot of a `ConnectionGate` until dropped.
#[derive(Debug)]
pub struct Admitted {
    open: Rc<Cell<usize>>,
}

impl ConnectionGate {
    pub fn new(max: usize) -> Self {
        ConnectionGate {
            max,
            open: Rc::new(Cell::new(0)),
        }
    }

    /// A slot for a new connection, or `None` when `max` are open.
    pub fn try_admit(&self) -> Option<Admitted> {
        let open = self.open.get();
        if open >= self.max {
            return None;
        }
        self.open.set(open + 1);
        Some(Admitted {
            open: self.open.clone(),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.get()
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.open.set(self.open.get().saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_counts_and_refuses() {
        let gate = ConnectionGate::new(2);
        let a = gate.try_admit();
        let b = gate.try_admit();
        assert!(a.is_some() && b.is_some());
        assert!(gate.try_admit().is_none());
        drop(a);
        assert_eq!(gate.open(), 1);
        assert!(gate.try_admit().is_some());
    }

    #[test]
    fn keys_of_zero_turn_time_limits_off() {
        let l = ConnectionLimits::from_keys(0, 7, 0, 30, 10);
        assert_eq!(l.max_in_flight, 1);
        assert_eq!(l.idle_timeout, Some(Duration::from_secs(7)));
        assert_eq!(l.frame_timeout, None);
        assert_eq!(l.write_stall_timeout, Some(Duration::from_secs(30)));
        assert_eq!(l.max_pending_response_bytes, 64 * 1024);
    }

    #[test]
    fn watch_interval_follows_the_shortest_limit() {
        let mut l = ConnectionLimits::new(4);
        l.frame_timeout = None;
        assert_eq!(l.watch_every(), None);
        l.idle_timeout = Some(Duration::from_millis(400));
        assert_eq!(l.watch_every(), Some(Duration::from_millis(100)));
        l.frame_timeout = Some(Duration::from_secs(120));
        assert_eq!(l.watch_every(), Some(Duration::from_millis(100)));
    }
}
