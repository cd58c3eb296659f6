//! What `loadgen omb` reports, in OMB's terms: one line per period (publish and consume rates in
//! msg/s and MB/s of 2^20 bytes, backlog, publish latency), the aggregated latency lines at the end,
//! and the result file with the field names of OMB's `TestResult` (series per period, aggregated
//! figures, quantile maps; latencies in milliseconds, the publish delay in whole microseconds as
//! OMB writes it).

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::stats::{per_second, Latency, Snapshot, CURVE_PERCENTILES};

/// OMB's MB: 2^20 bytes.
const MB: f64 = 1024.0 * 1024.0;

/// Latency figures at OMB's percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Points {
    pub avg: f64,
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub p99999: f64,
    pub max: f64,
}

impl Points {
    pub fn of(latency: &Latency) -> Points {
        Points {
            avg: latency.mean_ms(),
            p50: latency.percentile_ms(50.0),
            p75: latency.percentile_ms(75.0),
            p95: latency.percentile_ms(95.0),
            p99: latency.percentile_ms(99.0),
            p999: latency.percentile_ms(99.9),
            p9999: latency.percentile_ms(99.99),
            p99999: latency.percentile_ms(99.999),
            max: latency.max_ms(),
        }
    }

    /// `(suffix, value)` in OMB's field order (`...Avg`, `...50pct`, ..., `...Max`).
    fn fields(&self) -> [(&'static str, f64); 9] {
        [
            ("Avg", self.avg),
            ("50pct", self.p50),
            ("75pct", self.p75),
            ("95pct", self.p95),
            ("99pct", self.p99),
            ("999pct", self.p999),
            ("9999pct", self.p9999),
            ("99999pct", self.p99999),
            ("Max", self.max),
        ]
    }
}

/// One period's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Period {
    pub seconds: f64,
    pub publish_rate: f64,
    pub publish_mb: f64,
    pub publish_error_rate: f64,
    pub consume_rate: f64,
    pub consume_mb: f64,
    /// Messages not yet received by every subscription, at the period's end.
    pub backlog: u64,
    pub publish: Points,
    /// How late sends left after their intended time (open loop only).
    pub delay: Points,
    pub e2e: Points,
}

impl Period {
    pub fn of(snapshot: &Snapshot, length: Duration, backlog: u64) -> Period {
        let (send, consume) = (&snapshot.send, &snapshot.consume);
        let errors = send.send_failed.saturating_add(send.response_failed);
        Period {
            seconds: length.as_secs_f64(),
            publish_rate: per_second(send.ok_msgs, length),
            publish_mb: per_second(send.ok_bytes, length) / MB,
            publish_error_rate: per_second(errors, length),
            consume_rate: per_second(consume.msgs, length),
            consume_mb: per_second(consume.bytes, length) / MB,
            backlog,
            publish: Points::of(&send.latency),
            delay: Points::of(&send.delay),
            e2e: Points::of(&consume.e2e),
        }
    }

    /// OMB's periodic line.
    pub fn line(&self) -> String {
        let (l, d) = (&self.publish, &self.delay);
        let us = |ms: f64| (ms * 1000.0).round();
        format!(
            "Pub rate {:.1} msg/s / {:.1} MB/s | Pub err {:.1} err/s | Cons rate {:.1} msg/s / {:.1} MB/s | Backlog: {:.1} K | Pub Latency (ms) avg: {:.1} - 50%: {:.1} - 99%: {:.1} - 99.9%: {:.1} - Max: {:.1} | Pub Delay Latency (us) avg: {:.0} - 50%: {:.0} - 99%: {:.0} - 99.9%: {:.0} - Max: {:.0}",
            self.publish_rate,
            self.publish_mb,
            self.publish_error_rate,
            self.consume_rate,
            self.consume_mb,
            self.backlog as f64 / 1000.0,
            l.avg,
            l.p50,
            l.p99,
            l.p999,
            l.max,
            us(d.avg),
            us(d.p50),
            us(d.p99),
            us(d.p999),
            us(d.max)
        )
    }
}

/// OMB's closing lines: the whole test's publish and end-to-end latency.
pub fn aggregated_lines(test: &Snapshot) -> Vec<String> {
    let line = |what: &str, p: Points| {
        format!(
            "----- Aggregated {what} Latency (ms) avg: {:.1} - 50%: {:.1} - 95%: {:.1} - 99%: {:.1} - 99.9%: {:.1} - 99.99%: {:.1} - Max: {:.1}",
            p.avg, p.p50, p.p95, p.p99, p.p999, p.p9999, p.max
        )
    };
    vec![
        line("Pub", Points::of(&test.send.latency)),
        line("E2E", Points::of(&test.consume.e2e)),
    ]
}

/// The workload's shape, as OMB's result file states it.
pub struct Meta<'a> {
    pub workload: &'a str,
    pub driver: &'a str,
    pub message_size: usize,
    pub topics: u32,
    pub partitions: u32,
    pub producers_per_topic: u32,
    pub consumers_per_topic: u32,
}

/// Percentile -> milliseconds, keyed as OMB's quantile maps (`"99.9"`).
fn quantiles(latency: &Latency) -> Value {
    let mut map = Map::new();
    for p in CURVE_PERCENTILES
        .iter()
        .copied()
        .chain(std::iter::once(100.0))
    {
        map.insert(format!("{p:?}"), json!(latency.percentile_ms(p)));
    }
    Value::Object(map)
}

/// `ms` as OMB's publish-delay fields: whole microseconds, the average as a double.
fn micros(suffix: &str, ms: f64) -> Value {
    let us = ms * 1000.0;
    if suffix == "Avg" {
        json!(us)
    } else {
        json!(us.round() as u64)
    }
}

/// The result file: OMB's `TestResult` fields, then loadgen's own under `loadgen`.
pub fn test_result(meta: &Meta<'_>, periods: &[Period], test: &Snapshot, extra: Value) -> Value {
    let mut root = Map::new();
    root.insert("workload".into(), json!(meta.workload));
    root.insert("driver".into(), json!(meta.driver));
    root.insert("messageSize".into(), json!(meta.message_size));
    root.insert("topics".into(), json!(meta.topics));
    root.insert("partitions".into(), json!(meta.partitions));
    root.insert("producersPerTopic".into(), json!(meta.producers_per_topic));
    root.insert("consumersPerTopic".into(), json!(meta.consumers_per_topic));
    let series = |f: fn(&Period) -> f64| -> Value { periods.iter().map(f).collect() };
    root.insert("publishRate".into(), series(|p| p.publish_rate));
    root.insert("publishErrorRate".into(), series(|p| p.publish_error_rate));
    root.insert("consumeRate".into(), series(|p| p.consume_rate));
    root.insert(
        "backlog".into(),
        periods.iter().map(|p| p.backlog).collect(),
    );
    for (prefix, pick) in [
        (
            "publishLatency",
            (|p: &Period| p.publish) as fn(&Period) -> Points,
        ),
        ("endToEndLatency", |p: &Period| p.e2e),
    ] {
        for (i, (suffix, _)) in Points::default().fields().iter().enumerate() {
            let values: Vec<f64> = periods
                .iter()
                .map(|p| pick(p).fields().get(i).map_or(0.0, |f| f.1))
                .collect();
            root.insert(format!("{prefix}{suffix}"), json!(values));
        }
    }
    // The publish delay in whole microseconds (OMB's longs), its average as a double.
    for (i, (suffix, _)) in Points::default().fields().iter().enumerate() {
        let values: Vec<Value> = periods
            .iter()
            .map(|p| micros(suffix, p.delay.fields().get(i).map_or(0.0, |f| f.1)))
            .collect();
        root.insert(format!("publishDelayLatency{suffix}"), Value::Array(values));
    }
    for (suffix, value) in Points::of(&test.send.delay).fields() {
        root.insert(
            format!("aggregatedPublishDelayLatency{suffix}"),
            micros(suffix, value),
        );
    }
    let mut delay_quantiles = Map::new();
    for p in CURVE_PERCENTILES
        .iter()
        .copied()
        .chain(std::iter::once(100.0))
    {
        let us = (test.send.delay.percentile_ms(p) * 1000.0).round() as u64;
        delay_quantiles.insert(format!("{p:?}"), json!(us));
    }
    root.insert(
        "aggregatedPublishDelayLatencyQuantiles".into(),
        Value::Object(delay_quantiles),
    );
    for (prefix, latency) in [
        ("aggregatedPublishLatency", &test.send.latency),
        ("aggregatedEndToEndLatency", &test.consume.e2e),
    ] {
        for (suffix, value) in Points::of(latency).fields() {
            root.insert(format!("{prefix}{suffix}"), json!(value));
        }
        root.insert(format!("{prefix}Quantiles"), quantiles(latency));
    }
    root.insert("loadgen".into(), extra);
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKey;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::default();
        // 1..=1000 us of publish latency, 1 MiB per 1,000 messages.
        for us in 1..=1000u64 {
            s.send
                .record_ok(1, 1024 * 1024 / 1000, Duration::from_micros(us));
        }
        s.send.record_error(ErrorKey::Code(2), 10);
        s.send.delay.record(Duration::from_micros(40));
        s.consume.msgs = 500;
        s.consume.bytes = 512 * 1024;
        s.consume.e2e.record(Duration::from_millis(3));
        s
    }

    #[test]
    fn a_period_has_omb_rates_and_line() {
        let p = Period::of(&snapshot(), Duration::from_secs(2), 2500);
        assert_eq!(p.publish_rate, 500.0);
        assert_eq!(p.publish_error_rate, 5.0);
        assert_eq!(p.consume_rate, 250.0);
        assert!((p.consume_mb - 0.25).abs() < 1e-9, "{}", p.consume_mb);
        assert!((p.publish.p50 - 0.5).abs() < 0.002, "{:?}", p.publish);
        assert!((p.publish.p75 - 0.75).abs() < 0.002, "{:?}", p.publish);
        let line = p.line();
        assert!(
            line.starts_with("Pub rate 500.0 msg/s / 0.5 MB/s | Pub err 5.0 err/s | Cons rate 250.0 msg/s / 0.2 MB/s | Backlog: 2.5 K | Pub Latency (ms) avg: 0.5 - 50%: 0.5"),
            "{line}"
        );
        assert!(
            line.contains("Max: 1.0 | Pub Delay Latency (us) avg: 40 - 50%: 40"),
            "{line}"
        );
    }

    #[test]
    fn the_result_has_omb_field_names_series_and_aggregates() {
        let s = snapshot();
        let periods = vec![
            Period::of(&s, Duration::from_secs(1), 7),
            Period::of(&s, Duration::from_secs(2), 0),
        ];
        let meta = Meta {
            workload: "w",
            driver: "d",
            message_size: 1024,
            topics: 1,
            partitions: 16,
            producers_per_topic: 1,
            consumers_per_topic: 1,
        };
        let v = test_result(&meta, &periods, &s, json!({"x": 1}));
        assert_eq!(v["workload"], "w");
        assert_eq!(v["partitions"], 16);
        assert_eq!(v["publishRate"], json!([1000.0, 500.0]));
        assert_eq!(v["backlog"], json!([7, 0]));
        assert_eq!(v["publishErrorRate"], json!([10.0, 5.0]));
        for key in [
            "publishLatencyAvg",
            "publishLatency50pct",
            "publishLatency75pct",
            "publishLatency95pct",
            "publishLatency99pct",
            "publishLatency999pct",
            "publishLatency9999pct",
            "publishLatency99999pct",
            "publishLatencyMax",
            "endToEndLatency50pct",
            "endToEndLatencyMax",
        ] {
            assert_eq!(v[key].as_array().map(Vec::len), Some(2), "{key}");
        }
        let p99 = v["aggregatedPublishLatency99pct"].as_f64().unwrap();
        assert!((p99 - 0.99).abs() < 0.002, "{p99}");
        assert!((v["aggregatedEndToEndLatencyMax"].as_f64().unwrap() - 3.0).abs() < 0.01);
        assert!(v["aggregatedPublishLatencyQuantiles"]["99.9"].is_number());
        assert!(v["aggregatedEndToEndLatencyQuantiles"]["100.0"].is_number());
        assert_eq!(v["loadgen"]["x"], 1);
        assert_eq!(v["publishDelayLatency50pct"], json!([40, 40]));
        assert_eq!(v["aggregatedPublishDelayLatencyMax"], 40);
        assert_eq!(v["aggregatedPublishDelayLatencyQuantiles"]["99.0"], 40);
        let lines = aggregated_lines(&s);
        assert!(
            lines[0]
                .starts_with("----- Aggregated Pub Latency (ms) avg: 0.5 - 50%: 0.5 - 95%: 0.9"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("E2E Latency (ms) avg: 3.0"),
            "{}",
            lines[1]
        );
    }
}
