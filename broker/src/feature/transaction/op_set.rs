//! The pure bookkeeping of transactions: which half messages are resolved (the op set, keyed by the
//! queue offset of the first half message of a transaction) and when an unresolved one is due for a
//! check-back or a final rollback.

use std::collections::HashSet;

/// When and how often half messages are checked back (RocketMQ's transactionTimeOut,
/// transactionCheckInterval, transactionCheckMax).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckPolicy {
    pub timeout_ms: i64,
    pub interval_ms: i64,
    pub max_checks: u32,
}

/// A half message stored at most this far in the future (clock skew between replicas, a tiny step) just
/// waits; further is a clock step back.
const CLOCK_STEP_TOLERANCE_MS: i64 = 1_000;

/// What the check service does with one half message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Committed or rolled back already: skip it.
    Resolved,
    /// Too young to check: stop the scan here (later entries are younger or as young).
    NotDue,
    /// Ask the producer again; `times` is the check count after this check.
    Check { times: u32 },
    /// Checked the maximum number of times without an answer: roll back.
    GiveUp,
}

impl CheckPolicy {
    /// The policy in force on this shard (`config::live`: UPDATE_BROKER_CONFIG changes it at run time).
    pub fn in_force(cfg: &crate::config::BrokerConfig) -> CheckPolicy {
        let (timeout_ms, interval_ms, max_checks) = crate::config::live::transaction_check(cfg);
        CheckPolicy {
            timeout_ms: i64::try_from(timeout_ms).unwrap_or(i64::MAX),
            interval_ms: i64::try_from(interval_ms).unwrap_or(i64::MAX),
            max_checks,
        }
    }

    /// How long the check service sleeps between rounds: often enough that a check is sent within a
    /// fraction of the timeout after it is due (0.1 to 1 s).
    pub fn round_period(&self) -> std::time::Duration {
        let shortest = self.timeout_ms.min(self.interval_ms) / 4;
        std::time::Duration::from_millis(u64::try_from(shortest.clamp(100, 1_000)).unwrap_or(1_000))
    }

    /// The verdict for a half message stored at `stored_ms` that was checked `check_times` times so far.
    /// `immunity_s` is the producer's CHECK_IMMUNITY_TIME_IN_SECONDS, which delays the first check.
    pub fn verdict(
        &self,
        resolved: bool,
        check_times: u32,
        stored_ms: i64,
        immunity_s: Option<i64>,
        now_ms: i64,
    ) -> Verdict {
        if resolved {
            return Verdict::Resolved;
        }
        let wait_ms = if check_times == 0 {
            let immunity_ms = immunity_s.unwrap_or(0).saturating_mul(1000);
            self.timeout_ms.max(immunity_ms)
        } else {
            self.interval_ms
        };
        let age_ms = now_ms.saturating_sub(stored_ms);
        // Stored "in the future": the wall clock stepped back since. Checked now, as RocketMQ does,
        // rather than after the step's length too (an early check is only a question to the producer).
        let stepped_back = age_ms < -CLOCK_STEP_TOLERANCE_MS;
        if age_ms < wait_ms && !stepped_back {
            return Verdict::NotDue;
        }
        if check_times >= self.max_checks {
            return Verdict::GiveUp;
        }
        Verdict::Check {
            times: check_times.saturating_add(1),
        }
    }
}

/// Resolved transactions, by the half queue offset of their first half message, and those being
/// resolved right now (so a concurrent second END_TRANSACTION cannot resolve one twice, and the check
/// service waits for the outcome instead of skipping it).
#[derive(Debug, Default)]
pub struct OpSet {
    resolved: HashSet<i64>,
    resolving: HashSet<i64>,
}

impl OpSet {
    /// Starts resolving `origin`; false when it is resolved (or being resolved) already.
    pub fn begin(&mut self, origin: i64) -> bool {
        if self.resolved.contains(&origin) {
            return false;
        }
        self.resolving.insert(origin)
    }

    /// The resolution started by `begin` is done (its op message written or attempted).
    pub fn finish(&mut self, origin: i64) {
        self.resolving.remove(&origin);
        self.resolved.insert(origin);
    }

    /// Undoes `begin` after the resolution failed before anything became visible.
    pub fn abort(&mut self, origin: i64) {
        self.resolving.remove(&origin);
    }

    /// Records an op read back from the op queue at start.
    pub fn mark(&mut self, origin: i64) {
        self.resolved.insert(origin);
    }

    pub fn is_resolved(&self, origin: i64) -> bool {
        self.resolved.contains(&origin)
    }

    pub fn is_resolving(&self, origin: i64) -> bool {
        self.resolving.contains(&origin)
    }

    /// Resolved transactions.
    pub fn len(&self) -> usize {
        self.resolved.len()
    }
}

/// Reads an op message body: the half queue offset it resolves, as decimal text (RocketMQ's format).
pub fn parse_op_body(body: &[u8]) -> Option<i64> {
    std::str::from_utf8(body).ok()?.trim().parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: CheckPolicy = CheckPolicy {
        timeout_ms: 6_000,
        interval_ms: 60_000,
        max_checks: 3,
    };

    #[test]
    fn first_check_waits_for_the_timeout_then_the_interval() {
        let stored = 1_000_000;
        assert_eq!(
            POLICY.verdict(false, 0, stored, None, stored + 5_999),
            Verdict::NotDue
        );
        assert_eq!(
            POLICY.verdict(false, 0, stored, None, stored + 6_000),
            Verdict::Check { times: 1 }
        );
        // A copy (already checked once) waits the check interval from its own store time.
        assert_eq!(
            POLICY.verdict(false, 1, stored, None, stored + 59_999),
            Verdict::NotDue
        );
        assert_eq!(
            POLICY.verdict(false, 1, stored, None, stored + 60_000),
            Verdict::Check { times: 2 }
        );
        assert_eq!(
            POLICY.verdict(false, 2, stored, None, stored + 60_000),
            Verdict::Check { times: 3 }
        );
        assert_eq!(
            POLICY.verdict(false, 3, stored, None, stored + 60_000),
            Verdict::GiveUp
        );
        assert_eq!(
            POLICY.verdict(false, 3, stored, None, stored + 10),
            Verdict::NotDue
        );
    }

    #[test]
    fn resolved_wins_and_immunity_delays_the_first_check() {
        let stored = 50;
        assert_eq!(
            POLICY.verdict(true, 0, stored, None, stored),
            Verdict::Resolved
        );
        assert_eq!(
            POLICY.verdict(true, 9, stored, None, stored + 1),
            Verdict::Resolved
        );
        assert_eq!(
            POLICY.verdict(false, 0, stored, Some(20), stored + 19_999),
            Verdict::NotDue
        );
        assert_eq!(
            POLICY.verdict(false, 0, stored, Some(20), stored + 20_000),
            Verdict::Check { times: 1 }
        );
        // A clock step backwards (stored in the future) makes it due at once, without overflowing;
        // a second of skew does not.
        assert_eq!(
            POLICY.verdict(false, 0, stored, Some(i64::MAX), i64::MIN),
            Verdict::Check { times: 1 }
        );
        assert_eq!(
            POLICY.verdict(false, 0, stored + 3_600_000, None, stored),
            Verdict::Check { times: 1 }
        );
        assert_eq!(
            POLICY.verdict(false, 0, stored + 1_000, None, stored),
            Verdict::NotDue
        );
    }

    #[test]
    fn a_transaction_resolves_once() {
        let mut ops = OpSet::default();
        assert!(ops.begin(7));
        assert!(
            !ops.begin(7),
            "a concurrent second resolution must be refused"
        );
        assert!(ops.is_resolving(7) && !ops.is_resolved(7));
        ops.abort(7);
        assert!(!ops.is_resolving(7) && !ops.is_resolved(7));
        assert!(ops.begin(7));
        ops.finish(7);
        assert!(ops.is_resolved(7) && !ops.is_resolving(7));
        assert!(
            !ops.begin(7),
            "a second commit of the same half must be refused"
        );
        ops.mark(8);
        assert!(!ops.begin(8));
        assert_eq!(ops.len(), 2);
    }

    #[test]
    fn op_bodies_parse_or_are_rejected() {
        assert_eq!(parse_op_body(b"42"), Some(42));
        assert_eq!(parse_op_body(b" 3\n"), Some(3));
        assert_eq!(parse_op_body(b"x"), None);
        assert_eq!(parse_op_body(&[0xff, 0xfe]), None);
        assert_eq!(parse_op_body(b"99999999999999999999999"), None);
    }
}
