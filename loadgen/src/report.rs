//! What loadgen prints: one line per interval in the spirit of RocketMQ's benchmark tool, a live
//! progress line on a terminal, the summary, and the JSON file.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::aggregate::Interval;
use crate::errors::{ErrorCounts, ErrorKey};
use crate::stats::{mb_per_second, per_second, ConsumeStats, SendStats};

/// Which sides a run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    Produce,
    Consume,
    Both,
}

impl Sides {
    pub fn produces(self) -> bool {
        matches!(self, Sides::Produce | Sides::Both)
    }

    pub fn consumes(self) -> bool {
        matches!(self, Sides::Consume | Sides::Both)
    }

    pub fn name(self) -> &'static str {
        match self {
            Sides::Produce => "produce",
            Sides::Consume => "consume",
            Sides::Both => "e2e",
        }
    }
}

/// `Send TPS: ... | Response Failed: n`.
pub fn send_line(s: &SendStats, elapsed: Duration) -> String {
    let l = s.latency.figures();
    format!(
        "Send TPS: {:.0} | MB/s: {:.1} | Avg RT: {:.3} ms | p50: {:.3} | p99: {:.3} | p999: {:.3} | Max RT: {:.3} | Send Failed: {} | Response Failed: {}",
        per_second(s.ok_msgs, elapsed),
        mb_per_second(s.ok_bytes, elapsed),
        l.avg,
        l.p50,
        l.p99,
        l.p999,
        l.max,
        s.send_failed,
        s.response_failed
    )
}

/// `Consume TPS: ... | Backlog: n`.
pub fn consume_line(s: &ConsumeStats, elapsed: Duration) -> String {
    let l = s.e2e.figures();
    let backlog = s.backlog.map_or_else(|| "-".to_owned(), |b| b.to_string());
    format!(
        "Consume TPS: {:.0} | MB/s: {:.1} | E2E Avg: {:.3} ms | p50: {:.3} | p99: {:.3} | p999: {:.3} | Max: {:.3} | Backlog: {} | Pull Failed: {}",
        per_second(s.msgs, elapsed),
        mb_per_second(s.bytes, elapsed),
        l.avg,
        l.p50,
        l.p99,
        l.p999,
        l.max,
        backlog,
        s.pull_failed
    )
}

/// The lines of one interval (errors by code appended when there were any).
pub fn interval_lines(sides: Sides, interval: &Interval) -> Vec<String> {
    let tag = if interval.warmup { " warm-up" } else { "" };
    let prefix = format!("[{:>7.1}s{tag}]", interval.end.as_secs_f64());
    let elapsed = interval.length();
    let mut lines = Vec::new();
    if sides.produces() {
        let s = &interval.snapshot.send;
        let mut line = format!("{prefix} {}", send_line(s, elapsed));
        if !s.errors.is_empty() {
            line.push_str(&format!(" | errors: {}", s.errors.summary()));
        }
        lines.push(line);
    }
    if sides.consumes() {
        let s = &interval.snapshot.consume;
        let mut line = format!("{prefix} {}", consume_line(s, elapsed));
        if !s.errors.is_empty() {
            line.push_str(&format!(" | errors: {}", s.errors.summary()));
        }
        lines.push(line);
    }
    lines
}

/// Prints interval lines; on a terminal also keeps a live progress line under them.
pub struct Printer {
    tty: bool,
    progress_shown: bool,
}

impl Default for Printer {
    fn default() -> Self {
        Printer::new()
    }
}

impl Printer {
    pub fn new() -> Printer {
        Printer {
            tty: std::io::stdout().is_terminal(),
            progress_shown: false,
        }
    }

    fn clear_progress(&mut self, out: &mut impl Write) {
        if self.progress_shown {
            let _ = write!(out, "\r\x1b[K");
            self.progress_shown = false;
        }
    }

    pub fn line(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        self.clear_progress(&mut out);
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// Redraws the progress line (terminal only).
    pub fn progress(&mut self, text: &str) {
        if !self.tty {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r\x1b[K{text}");
        let _ = out.flush();
        self.progress_shown = true;
    }

    pub fn finish(&mut self) {
        let mut out = std::io::stdout().lock();
        self.clear_progress(&mut out);
        let _ = out.flush();
    }
}

fn errors_json(errors: &ErrorCounts) -> (Value, Value) {
    let mut by_label = Map::new();
    let mut by_code = Map::new();
    for (key, n) in errors.iter() {
        by_label.insert(key.label(), json!(n));
        if let ErrorKey::Code(code) = key {
            by_code.insert(code.to_string(), json!(n));
        }
    }
    (Value::Object(by_label), Value::Object(by_code))
}

/// The summary's figures as JSON.
pub struct SummaryInput<'a> {
    pub sides: Sides,
    pub command: &'a str,
    pub threads: usize,
    pub warmup: Duration,
    pub measured: Duration,
    pub send: &'a SendStats,
    pub consume: &'a ConsumeStats,
    /// Counts including the warm-up.
    pub send_all: &'a SendStats,
    pub consume_all: &'a ConsumeStats,
}

pub fn summary_json(input: &SummaryInput<'_>) -> Value {
    let elapsed = input.measured;
    let mut root = Map::new();
    root.insert("mode".into(), json!(input.sides.name()));
    root.insert("command".into(), json!(input.command));
    root.insert("threads".into(), json!(input.threads));
    root.insert("warmup_s".into(), json!(input.warmup.as_secs_f64()));
    root.insert("measured_s".into(), json!(elapsed.as_secs_f64()));
    if input.sides.produces() {
        let s = input.send;
        let (errors, codes) = errors_json(&s.errors);
        root.insert(
            "produce".into(),
            json!({
                "messages": s.ok_msgs,
                "bytes": s.ok_bytes,
                "tps": per_second(s.ok_msgs, elapsed),
                "mb_per_s": mb_per_second(s.ok_bytes, elapsed),
                "send_failed": s.send_failed,
                "response_failed": s.response_failed,
                "missed_open_loop": s.missed,
                "errors": errors,
                "response_codes": codes,
                "rt_ms": s.latency.figures(),
                "rt_percentiles_ms": s.latency.percentile_curve(),
                "requests": s.latency.count(),
                "attempted_incl_warmup": input.send_all.attempted(),
                "ok_incl_warmup": input.send_all.ok_msgs,
            }),
        );
    }
    if input.sides.consumes() {
        let s = input.consume;
        let (errors, codes) = errors_json(&s.errors);
        root.insert(
            "consume".into(),
            json!({
                "messages": s.msgs,
                "bytes": s.bytes,
                "tps": per_second(s.msgs, elapsed),
                "mb_per_s": mb_per_second(s.bytes, elapsed),
                "pull_failed": s.pull_failed,
                "errors": errors,
                "response_codes": codes,
                "e2e_ms": s.e2e.figures(),
                "e2e_percentiles_ms": s.e2e.percentile_curve(),
                "backlog": s.backlog,
                "messages_incl_warmup": input.consume_all.msgs,
            }),
        );
    }
    Value::Object(root)
}

/// The human summary.
pub fn summary_text(input: &SummaryInput<'_>) -> Vec<String> {
    let mut lines = vec![format!(
        "=== summary: {} over {:.1}s measured (after {:.1}s warm-up), {} executor(s)",
        input.sides.name(),
        input.measured.as_secs_f64(),
        input.warmup.as_secs_f64(),
        input.threads
    )];
    if input.sides.produces() {
        let s = input.send;
        lines.push(send_line(s, input.measured));
        let l = s.latency.figures();
        lines.push(format!(
            "RT ms: p90 {:.3} | p9999 {:.3} | sent ok {} | requests {}",
            l.p90,
            l.p9999,
            s.ok_msgs,
            s.latency.count()
        ));
        if !s.errors.is_empty() {
            lines.push(format!("send errors: {}", s.errors.summary()));
        }
        if s.missed > 0 {
            lines.push(format!(
                "open loop: {} messages were due but never sent (every in-flight slot was busy)",
                s.missed
            ));
        }
    }
    if input.sides.consumes() {
        let s = input.consume;
        lines.push(consume_line(s, input.measured));
        let l = s.e2e.figures();
        lines.push(format!(
            "E2E ms: p90 {:.3} | p9999 {:.3} | consumed {}",
            l.p90, l.p9999, s.msgs
        ));
        if !s.errors.is_empty() {
            lines.push(format!("pull errors: {}", s.errors.summary()));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Snapshot;

    #[test]
    fn send_line_has_the_benchmark_columns() {
        let mut s = SendStats::default();
        s.record_ok(1000, 1_000_000, Duration::from_micros(500));
        s.record_error(ErrorKey::Code(2), 3);
        let line = send_line(&s, Duration::from_secs(2));
        assert!(
            line.starts_with("Send TPS: 500 | MB/s: 0.5 | Avg RT: 0.500 ms | p50: 0.500"),
            "{line}"
        );
        assert!(
            line.ends_with("Send Failed: 0 | Response Failed: 3"),
            "{line}"
        );
        let interval = Interval {
            seq: 0,
            start: Duration::ZERO,
            end: Duration::from_secs(2),
            warmup: true,
            snapshot: Snapshot {
                send: s,
                ..Snapshot::default()
            },
        };
        let lines = interval_lines(Sides::Produce, &interval);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("[    2.0s warm-up] Send TPS: 500"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].ends_with("errors: SYSTEM_BUSY(2)=3"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn json_reports_errors_by_code_and_percentiles() {
        let mut s = SendStats::default();
        s.record_ok(10, 10_240, Duration::from_millis(1));
        s.record_error(ErrorKey::Code(2), 4);
        s.record_error(ErrorKey::Local("timeout"), 1);
        let c = ConsumeStats::default();
        let input = SummaryInput {
            sides: Sides::Produce,
            command: "loadgen produce",
            threads: 1,
            warmup: Duration::ZERO,
            measured: Duration::from_secs(1),
            send: &s,
            consume: &c,
            send_all: &s,
            consume_all: &c,
        };
        let v = summary_json(&input);
        assert_eq!(v["produce"]["messages"], 10);
        assert_eq!(v["produce"]["tps"], 10.0);
        assert_eq!(v["produce"]["response_codes"]["2"], 4);
        assert_eq!(v["produce"]["errors"]["timeout"], 1);
        assert_eq!(v["produce"]["attempted_incl_warmup"], 15);
        assert_eq!(v["produce"]["rt_ms"]["p999"], 1.0);
        assert!(v.get("consume").is_none());
        assert!(summary_text(&input)
            .iter()
            .any(|l| l.contains("SYSTEM_BUSY(2)=4")));
    }

    #[test]
    fn json_carries_percentile_curves_for_sends_and_e2e() {
        let mut s = SendStats::default();
        // 1..=1000 us, one each: p50 is 0.5 ms, p99 0.99 ms, the maximum 1 ms.
        for us in 1..=1000u64 {
            s.record_ok(1, 1024, Duration::from_micros(us));
        }
        let mut c = ConsumeStats {
            msgs: 2,
            ..ConsumeStats::default()
        };
        c.e2e.record(Duration::from_millis(2));
        c.e2e.record(Duration::from_millis(40));
        let input = SummaryInput {
            sides: Sides::Both,
            command: "loadgen e2e",
            threads: 1,
            warmup: Duration::ZERO,
            measured: Duration::from_secs(1),
            send: &s,
            consume: &c,
            send_all: &s,
            consume_all: &c,
        };
        let v = summary_json(&input);
        let curve = v["produce"]["rt_percentiles_ms"].as_array().unwrap();
        let percentiles: Vec<f64> = curve
            .iter()
            .map(|p| p["percentile"].as_f64().unwrap())
            .collect();
        let mut expected = crate::stats::CURVE_PERCENTILES.to_vec();
        expected.push(100.0);
        assert_eq!(percentiles, expected);
        let ms = |curve: &[Value], p: f64| {
            curve
                .iter()
                .find(|x| x["percentile"].as_f64() == Some(p))
                .and_then(|x| x["ms"].as_f64())
                .unwrap()
        };
        assert!((ms(curve, 50.0) - 0.5).abs() < 0.001, "{curve:?}");
        assert!((ms(curve, 99.0) - 0.99).abs() < 0.001, "{curve:?}");
        assert!((ms(curve, 100.0) - 1.0).abs() < 0.001, "{curve:?}");
        // Non-decreasing, as a curve must be.
        assert!(curve
            .windows(2)
            .all(|w| w[0]["ms"].as_f64() <= w[1]["ms"].as_f64()));
        let e2e = v["consume"]["e2e_percentiles_ms"].as_array().unwrap();
        assert_eq!(e2e.len(), expected.len());
        assert!((ms(e2e, 50.0) - 2.0).abs() < 0.01, "{e2e:?}");
        assert!((ms(e2e, 100.0) - 40.0).abs() < 0.05, "{e2e:?}");
    }
}
