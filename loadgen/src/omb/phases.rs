//! The phases of an OMB run, driven by the merged counters every sample: warm-up, then the test;
//! with consumerBacklogSizeGB, the test first builds the backlog with consumers paused (until
//! `subscriptions x sent - received` messages of messageSize reach it), then resumes them and times
//! the drain (done at OMB's 1,000 messages or fewer left). The test ends once its duration is over
//! and any drain is done.

use std::time::Duration;

/// The drain is over once the backlog is this many messages or fewer (OMB's threshold).
pub const DRAINED_AT: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Warmup,
    Building,
    Draining,
    Test,
    Finished,
}

/// What the driver must do after a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    WarmupDone,
    PauseConsumers,
    ResumeConsumers,
    DrainDone,
    Stop,
    /// The backlog was not built or drained within the limit: stop, the run failed.
    GiveUp(String),
}

/// The backlog phase's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BacklogFigures {
    pub requested_bytes: u64,
    /// Seconds from the test's start to the backlog reaching the request.
    pub build_s: Option<f64>,
    /// Backlog (messages) when consumers resumed.
    pub backlog_at_drain_start: Option<u64>,
    /// Seconds from the resume to the backlog at [`DRAINED_AT`] or below.
    pub drain_s: Option<f64>,
    /// Messages consumed during the drain.
    pub drained_messages: Option<u64>,
}

pub struct Phases {
    pub state: State,
    warmup: Duration,
    test: Duration,
    subscriptions: u64,
    message_size: u64,
    backlog_limit: Duration,
    test_start: Duration,
    phase_start: Duration,
    received_at_drain_start: u64,
    pub backlog: BacklogFigures,
}

impl Phases {
    /// `backlog_bytes` 0: no backlog phase. `backlog_limit`: longest the build and the drain may each take.
    pub fn new(
        warmup: Duration,
        test: Duration,
        subscriptions: u64,
        message_size: u64,
        backlog_bytes: u64,
        backlog_limit: Duration,
    ) -> Phases {
        let mut phases = Phases {
            state: State::Warmup,
            warmup,
            test,
            subscriptions,
            message_size: message_size.max(1),
            backlog_limit,
            test_start: Duration::ZERO,
            phase_start: Duration::ZERO,
            received_at_drain_start: 0,
            backlog: BacklogFigures {
                requested_bytes: backlog_bytes,
                ..BacklogFigures::default()
            },
        };
        if warmup.is_zero() {
            phases.start_test(Duration::ZERO);
        }
        phases
    }

    /// Whether consumers start paused (a backlog run without warm-up).
    pub fn starts_paused(&self) -> bool {
        self.state == State::Building
    }

    /// Whether the samples now count for the test (not warm-up, not after the end).
    pub fn measuring(&self) -> bool {
        !matches!(self.state, State::Warmup | State::Finished)
    }

    fn start_test(&mut self, at: Duration) {
        self.test_start = at;
        self.phase_start = at;
        self.state = if self.backlog.requested_bytes > 0 {
            State::Building
        } else {
            State::Test
        };
    }

    /// Messages not yet received by every subscription.
    pub fn backlog_of(&self, sent: u64, received: u64) -> u64 {
        self.subscriptions
            .saturating_mul(sent)
            .saturating_sub(received)
    }

    /// After a sample ending `at` from the start, with `sent` and `received` messages so far.
    pub fn on_sample(&mut self, at: Duration, sent: u64, received: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        if self.state == State::Warmup && at >= self.warmup {
            actions.push(Action::WarmupDone);
            self.start_test(at);
            if self.state == State::Building {
                actions.push(Action::PauseConsumers);
            }
            return actions;
        }
        let backlog = self.backlog_of(sent, received);
        let in_phase = at.saturating_sub(self.phase_start);
        match self.state {
            State::Building => {
                if backlog.saturating_mul(self.message_size) >= self.backlog.requested_bytes {
                    self.state = State::Draining;
                    self.backlog.build_s = Some(in_phase.as_secs_f64());
                    self.backlog.backlog_at_drain_start = Some(backlog);
                    self.received_at_drain_start = received;
                    self.phase_start = at;
                    actions.push(Action::ResumeConsumers);
                } else if in_phase >= self.backlog_limit {
                    self.state = State::Finished;
                    actions.push(Action::GiveUp(format!(
                        "the backlog reached {} of {} bytes in {:.0}s",
                        backlog.saturating_mul(self.message_size),
                        self.backlog.requested_bytes,
                        in_phase.as_secs_f64()
                    )));
                }
            }
            State::Draining => {
                if backlog <= DRAINED_AT {
                    self.state = State::Test;
                    self.backlog.drain_s = Some(in_phase.as_secs_f64());
                    self.backlog.drained_messages =
                        Some(received.saturating_sub(self.received_at_drain_start));
                    actions.push(Action::DrainDone);
                } else if in_phase >= self.backlog_limit {
                    self.state = State::Finished;
                    actions.push(Action::GiveUp(format!(
                        "{backlog} messages of backlog left after {:.0}s of draining",
                        in_phase.as_secs_f64()
                    )));
                }
            }
            State::Test | State::Warmup | State::Finished => {}
        }
        if self.state == State::Test && at.saturating_sub(self.test_start) >= self.test {
            self.state = State::Finished;
            actions.push(Action::Stop);
        }
        actions
    }

    /// The test's length so far, at `at`.
    pub fn test_elapsed(&self, at: Duration) -> Duration {
        at.saturating_sub(self.test_start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn warmup_then_test_then_stop() {
        let mut p = Phases::new(s(2), s(3), 1, 1024, 0, s(60));
        assert!(!p.measuring());
        assert!(p.on_sample(s(1), 10, 10).is_empty());
        assert_eq!(p.on_sample(s(2), 20, 20), vec![Action::WarmupDone]);
        assert!(p.measuring());
        assert!(p.on_sample(s(4), 40, 40).is_empty());
        assert_eq!(p.on_sample(s(5), 50, 50), vec![Action::Stop]);
        assert!(!p.measuring());
        assert_eq!(p.test_elapsed(s(5)), s(3));
    }

    #[test]
    fn backlog_is_built_drained_and_timed() {
        // 2 subscriptions, 100-byte messages, 1 MB wanted: 10,000 messages of backlog.
        let mut p = Phases::new(Duration::ZERO, s(1), 2, 100, 1_000_000, s(60));
        assert!(p.starts_paused());
        assert!(p.on_sample(s(1), 4_000, 0).is_empty());
        assert_eq!(p.on_sample(s(2), 5_000, 0), vec![Action::ResumeConsumers]);
        assert_eq!(p.backlog.backlog_at_drain_start, Some(10_000));
        assert_eq!(p.backlog.build_s, Some(2.0));
        // Producers go on: 2 x 6,000 - 9,000 = 3,000 left, then 2 x 7,000 - 13,500 = 500.
        assert!(p.on_sample(s(3), 6_000, 9_000).is_empty());
        // The test's duration is long over, but it ends only with the drain.
        assert_eq!(
            p.on_sample(s(5), 7_000, 13_500),
            vec![Action::DrainDone, Action::Stop]
        );
        assert_eq!(p.backlog.drain_s, Some(3.0));
        assert_eq!(p.backlog.drained_messages, Some(13_500));
    }

    #[test]
    fn a_backlog_after_warmup_pauses_then_gives_up_past_the_limit() {
        let mut p = Phases::new(s(1), s(1), 1, 1, 1_000_000, s(3));
        assert!(!p.starts_paused());
        assert_eq!(
            p.on_sample(s(1), 5, 5),
            vec![Action::WarmupDone, Action::PauseConsumers]
        );
        assert!(p.on_sample(s(2), 10, 5).is_empty());
        let actions = p.on_sample(s(4), 20, 5);
        assert!(
            matches!(actions.as_slice(), [Action::GiveUp(why)] if why.contains("15 of 1000000 bytes")),
            "{actions:?}"
        );
    }
}
