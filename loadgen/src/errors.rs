//! Errors counted by what caused them: the broker's response code, or a local kind (timeout,
//! connection...). Bounded, so a flood of odd codes can't grow memory.

use std::collections::BTreeMap;

use client::{ClientError, ErrorKind};

/// At most this many distinct keys are kept; the rest are counted under `Other`.
pub const MAX_DISTINCT: usize = 64;

/// What one failure is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKey {
    /// The broker answered with this response code.
    Code(i32),
    /// No response: "timeout", "connection", "decode", "route", "invalid".
    Local(&'static str),
    /// Past `MAX_DISTINCT` keys.
    Other,
}

impl ErrorKey {
    pub fn of(error: &ClientError) -> ErrorKey {
        match error.kind() {
            ErrorKind::Response(code) => ErrorKey::Code(code),
            kind => ErrorKey::Local(kind.local_label()),
        }
    }

    /// Whether the broker answered (a "Response Failed") rather than the send failing locally.
    pub fn is_response(self) -> bool {
        matches!(self, ErrorKey::Code(_))
    }

    /// `SYSTEM_BUSY(2)`, `timeout`, `other`.
    pub fn label(self) -> String {
        match self {
            ErrorKey::Code(code) => {
                format!(
                    "{}({code})",
                    protocol::response_code::name(code).unwrap_or("CODE")
                )
            }
            ErrorKey::Local(kind) => kind.to_owned(),
            ErrorKey::Other => "other".to_owned(),
        }
    }
}

/// Failure counts by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    counts: BTreeMap<ErrorKey, u64>,
}

impl ErrorCounts {
    pub fn add(&mut self, key: ErrorKey, n: u64) {
        let key = if self.counts.len() >= MAX_DISTINCT && !self.counts.contains_key(&key) {
            ErrorKey::Other
        } else {
            key
        };
        let slot = self.counts.entry(key).or_insert(0);
        *slot = slot.saturating_add(n);
    }

    pub fn merge(&mut self, other: &ErrorCounts) {
        for (key, n) in &other.counts {
            self.add(*key, *n);
        }
    }

    pub fn get(&self, key: ErrorKey) -> u64 {
        self.counts.get(&key).copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (ErrorKey, u64)> + '_ {
        self.counts.iter().map(|(k, n)| (*k, *n))
    }

    /// `SYSTEM_BUSY(2)=5 timeout=1`.
    pub fn summary(&self) -> String {
        self.iter()
            .map(|(k, n)| format!("{}={n}", k.label()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_key_and_merges() {
        let mut a = ErrorCounts::default();
        a.add(ErrorKey::Code(2), 3);
        a.add(ErrorKey::Local("timeout"), 1);
        let mut b = ErrorCounts::default();
        b.add(ErrorKey::Code(2), 2);
        b.add(ErrorKey::Code(10), 1);
        a.merge(&b);
        assert_eq!(a.get(ErrorKey::Code(2)), 5);
        assert_eq!(a.get(ErrorKey::Code(10)), 1);
        assert_eq!(
            a.summary(),
            "SYSTEM_BUSY(2)=5 FLUSH_DISK_TIMEOUT(10)=1 timeout=1"
        );
    }

    #[test]
    fn distinct_keys_are_bounded() {
        let mut counts = ErrorCounts::default();
        for code in 0..1000 {
            counts.add(ErrorKey::Code(code), 1);
        }
        assert_eq!(counts.iter().count(), MAX_DISTINCT + 1);
        assert_eq!(counts.get(ErrorKey::Other), 1000 - MAX_DISTINCT as u64);
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 1000);
    }

    #[test]
    fn keys_come_from_client_errors() {
        let busy = ClientError::Response {
            code: 2,
            remark: String::new(),
        };
        assert_eq!(ErrorKey::of(&busy), ErrorKey::Code(2));
        assert!(ErrorKey::of(&busy).is_response());
        let timeout = ClientError::Remoting(remoting::RemotingError::Timeout(
            std::time::Duration::from_secs(1),
        ));
        assert_eq!(ErrorKey::of(&timeout), ErrorKey::Local("timeout"));
        assert!(!ErrorKey::of(&timeout).is_response());
    }
}
