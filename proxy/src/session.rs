//! Telemetry sessions: one per SDK client with an open Telemetry stream, holding the settings it
//! sent and the sender that pushes commands (orphaned-transaction recovery) to it.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;

use crate::pb::TelemetryCommand;

pub struct Session {
    pub client_id: String,
    /// Topics a producer publishes (from its Publishing settings).
    pub topics: Vec<String>,
    /// The consumer group (Subscription settings).
    pub group: Option<String>,
    pub tx: mpsc::Sender<Result<TelemetryCommand, tonic::Status>>,
    /// Distinguishes a reconnected stream from the one it replaced.
    pub stream_id: u64,
}

#[derive(Default)]
pub struct Sessions {
    by_client: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.by_client.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn upsert(&self, s: Session) {
        self.lock().insert(s.client_id.clone(), s);
    }

    /// Removes `client_id`'s session if it is still the stream `stream_id` (None: any).
    pub fn remove(&self, client_id: &str, stream_id: Option<u64>) {
        let mut map = self.lock();
        if map
            .get(client_id)
            .is_some_and(|s| stream_id.is_none_or(|id| s.stream_id == id))
        {
            map.remove(client_id);
        }
    }

    /// Every topic some connected producer publishes.
    pub fn published_topics(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .lock()
            .values()
            .flat_map(|s| s.topics.iter().cloned())
            .collect();
        t.sort();
        t.dedup();
        t
    }

    /// The stream of some producer publishing `topic` (a check-back goes to any one of them).
    pub fn publisher_of(
        &self,
        topic: &str,
    ) -> Option<mpsc::Sender<Result<TelemetryCommand, tonic::Status>>> {
        self.lock()
            .values()
            .find(|s| s.topics.iter().any(|t| t == topic) && !s.tx.is_closed())
            .map(|s| s.tx.clone())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
