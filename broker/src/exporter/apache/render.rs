//! Prometheus text (version 0.0.4) of an [`ApacheSnapshot`], as Apache RocketMQ 5's broker prints it
//! with `metricsExporterType = PROM` (OpenTelemetry's Prometheus exporter, meter `broker-meter`):
//! Apache's names, types and histogram buckets, every series labelled `cluster`, `node_type="broker"`
//! and `node_id` (the broker name), labels in key order, bucket bounds as Java prints doubles.

use std::fmt::Write;

use super::gather::ApacheSnapshot;
use super::labels;
use crate::feature::metrics::apache_local::{
    Histogram, MESSAGE_SIZE_BOUNDS, MESSAGE_TYPES, RPC_LATENCY_BOUNDS_MS,
};

/// OpenTelemetry's scope label: the meter Apache's broker records with.
const SCOPE: &str = "broker-meter";

/// Escapes a label value (backslash, double quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Out<'a> {
    text: String,
    snap: &'a ApacheSnapshot,
}

/// Names with a unit, and the suffix OpenTelemetry 1.29's exporter appends for it (the unit is not
/// already in the name; Apache 5.1.4 and later print these).
const UNIT_SUFFIXES: [(&str, &str); 5] = [
    ("rocketmq_rpc_latency", "_milliseconds"),
    ("rocketmq_consumer_lag_latency", "_milliseconds"),
    ("rocketmq_consumer_queueing_latency", "_milliseconds"),
    ("rocketmq_storage_message_reserve_time", "_milliseconds"),
    ("rocketmq_storage_size", "_bytes"),
];

impl Out<'_> {
    /// A family's exported name: with its unit appended when `metricsPromUnitSuffix` is on.
    fn exported(&self, name: &str) -> String {
        match UNIT_SUFFIXES.iter().find(|(n, _)| *n == name) {
            Some((_, unit)) if self.snap.unit_suffix => format!("{name}{unit}"),
            _ => name.to_owned(),
        }
    }

    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let name = self.exported(name);
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample: the common labels and `labels`, all sorted by key.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let name = self.exported(name);
        let mut all: Vec<(&str, String)> = vec![
            ("cluster", escape(&self.snap.cluster)),
            ("node_id", escape(&self.snap.node_id)),
            ("node_type", "broker".to_owned()),
            ("otel_scope_name", SCOPE.to_owned()),
        ];
        all.extend(labels.iter().map(|(k, v)| (*k, escape(v))));
        all.sort_by(|a, b| a.0.cmp(b.0));
        let body: Vec<String> = all.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let _ = writeln!(self.text, "{name}{{{}}} {value}", body.join(","));
    }

    /// `_bucket`s (cumulative), `_sum` and `_count` of one histogram series.
    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], bounds: &[u64], h: &Histogram) {
        let name = self.exported(name);
        let mut cumulative = 0u64;
        for i in 0..=bounds.len() {
            cumulative = cumulative.wrapping_add(h.buckets.get(i).copied().unwrap_or(0));
            let le = bounds
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |b| format!("{b}.0"));
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&format!("{name}_bucket"), &with_le, cumulative);
        }
        self.sample(&format!("{name}_sum"), labels, h.sum);
        self.sample(&format!("{name}_count"), labels, h.count);
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

pub fn render(s: &ApacheSnapshot) -> String {
    let mut o = Out {
        text: String::new(),
        snap: s,
    };
    o.family("rocketmq_broker_permission", "gauge", "Broker permission");
    o.sample("rocketmq_broker_permission", &[], s.broker_permission);
    o.family("rocketmq_topic_number", "gauge", "Active topic number");
    o.sample("rocketmq_topic_number", &[], s.topics);
    o.family(
        "rocketmq_consumer_group_number",
        "gauge",
        "Active subscription group number",
    );
    o.sample("rocketmq_consumer_group_number", &[], s.consumer_groups);

    let in_labels = |(topic, ty): &(String, usize)| {
        let message_type = MESSAGE_TYPES.get(*ty).copied().unwrap_or("normal");
        (
            topic.clone(),
            message_type,
            flag(labels::is_system_topic(topic)),
        )
    };
    type InRead = fn(&crate::feature::metrics::apache_local::InFigures) -> u64;
    let counters: [(&str, &str, InRead); 2] = [
        (
            "rocketmq_messages_in_total",
            "Total number of incoming messages",
            |f| f.messages,
        ),
        (
            "rocketmq_throughput_in_total",
            "Total traffic of incoming messages",
            |f| f.bytes,
        ),
    ];
    for (name, help, read) in counters {
        o.family(name, "counter", help);
        for (key, f) in &s.messages_in {
            let (topic, ty, system) = in_labels(key);
            let l = [
                ("topic", topic.as_str()),
                ("message_type", ty),
                ("is_system", system),
            ];
            o.sample(name, &l, read(f));
        }
    }
    o.family(
        "rocketmq_message_size",
        "histogram",
        "Incoming messages size",
    );
    for (key, f) in &s.messages_in {
        let (topic, ty, system) = in_labels(key);
        let l = [
            ("topic", topic.as_str()),
            ("message_type", ty),
            ("is_system", system),
        ];
        o.histogram("rocketmq_message_size", &l, &MESSAGE_SIZE_BOUNDS, &f.size);
    }

    type OutRead = fn(&crate::feature::metrics::apache_local::OutFigures) -> u64;
    let counters: [(&str, &str, OutRead); 2] = [
        (
            "rocketmq_messages_out_total",
            "Total number of outgoing messages",
            |f| f.messages,
        ),
        (
            "rocketmq_throughput_out_total",
            "Total traffic of outgoing messages",
            |f| f.bytes,
        ),
    ];
    for (name, help, read) in counters {
        o.family(name, "counter", help);
        for ((topic, group), f) in &s.messages_out {
            let system = labels::is_system_topic(topic) || labels::is_system_group(group);
            let l = [
                ("topic", topic.as_str()),
                ("consumer_group", group),
                ("is_system", flag(system)),
            ];
            o.sample(name, &l, read(f));
        }
    }

    o.family(
        "rocketmq_send_to_dlq_messages_total",
        "counter",
        "Consumer send to DLQ messages",
    );
    for ((group, topic), n) in &s.sent_to_dlq {
        let system = labels::is_system_topic(topic) || labels::is_system_group(group);
        let l = [
            ("consumer_group", group.as_str()),
            ("topic", topic),
            ("is_system", flag(system)),
        ];
        o.sample("rocketmq_send_to_dlq_messages_total", &l, n);
    }

    // Pulls are answered when they are read (pulled = committed as far as the broker knows), so
    // ready = lag, nothing is in flight and the queueing time is the lag time.
    type LagRead = fn(&super::gather::Lag, i64) -> i64;
    let since = |l: &super::gather::Lag, now: i64| {
        if l.messages > 0 && l.oldest_unconsumed_ms > 0 {
            now.saturating_sub(l.oldest_unconsumed_ms).max(0)
        } else {
            0
        }
    };
    let gauges: [(&str, &str, LagRead); 5] = [
        (
            "rocketmq_consumer_lag_messages",
            "Consumer lag messages",
            |l, _| l.messages,
        ),
        ("rocketmq_consumer_lag_latency", "Consumer lag time", since),
        (
            "rocketmq_consumer_inflight_messages",
            "Consumer inflight messages",
            |_, _| 0,
        ),
        (
            "rocketmq_consumer_queueing_latency",
            "Consumer queueing time",
            since,
        ),
        (
            "rocketmq_consumer_ready_messages",
            "Consumer ready messages",
            |l, _| l.messages,
        ),
    ];
    for (name, help, read) in gauges {
        o.family(name, "gauge", help);
        for ((topic, group), lag) in &s.lag {
            let retry = flag(crate::feature::metrics::apache_local::is_retry_or_dlq(
                topic,
            ));
            let system = labels::is_system_topic(topic) || labels::is_system_group(group);
            let l = [
                ("consumer_group", group.as_str()),
                ("topic", topic),
                ("is_retry", retry),
                ("is_system", flag(system)),
            ];
            o.sample(name, &l, read(lag, s.now_ms));
        }
    }

    o.family(
        "rocketmq_producer_connections",
        "gauge",
        "Producer connections",
    );
    for ((language, version), n) in &s.producers {
        let l = [
            ("language", language.as_str()),
            ("version", version),
            ("protocol_type", "remoting"),
        ];
        o.sample("rocketmq_producer_connections", &l, n);
    }
    o.family(
        "rocketmq_consumer_connections",
        "gauge",
        "Consumer connections",
    );
    for ((group, language, version, mode), n) in &s.consumers {
        let l = [
            ("consumer_group", group.as_str()),
            ("language", language),
            ("version", version),
            ("consume_mode", mode),
            ("protocol_type", "remoting"),
            ("is_system", flag(labels::is_system_group(group))),
        ];
        o.sample("rocketmq_consumer_connections", &l, n);
    }

    o.family("rocketmq_rpc_latency", "histogram", "Rpc latency");
    for ((request, response, long_polling), h) in &s.rpc_latency {
        let (request, response) = (
            labels::request_code(*request),
            labels::response_code(*response),
        );
        let l = [
            ("protocol_type", "remoting"),
            ("is_long_polling", flag(*long_polling)),
            ("request_code", request.as_str()),
            ("response_code", response.as_str()),
            ("result", "success"),
        ];
        o.histogram("rocketmq_rpc_latency", &l, &RPC_LATENCY_BOUNDS_MS, h);
    }

    let storage = [("storage_type", "local"), ("storage_medium", "disk")];
    if let Some(used) = s.storage_used_bytes {
        o.family("rocketmq_storage_size", "gauge", "Broker storage size");
        o.sample("rocketmq_storage_size", &storage, used);
    }
    o.family(
        "rocketmq_storage_flush_behind_bytes",
        "gauge",
        "Broker flush behind bytes",
    );
    o.sample(
        "rocketmq_storage_flush_behind_bytes",
        &storage,
        s.flush_behind_bytes,
    );
    // ConsumeQueues are written on the put path here: nothing waits to be dispatched.
    o.family(
        "rocketmq_storage_dispatch_behind_bytes",
        "gauge",
        "Broker dispatch behind bytes",
    );
    o.sample("rocketmq_storage_dispatch_behind_bytes", &storage, 0);
    o.family(
        "rocketmq_storage_message_reserve_time",
        "gauge",
        "Broker message reserve time",
    );
    let reserve = if s.earliest_store_ms > 0 {
        s.now_ms.saturating_sub(s.earliest_store_ms).max(0)
    } else {
        0
    };
    o.sample("rocketmq_storage_message_reserve_time", &storage, reserve);
    o.text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature::metrics::apache_local::{InFigures, OutFigures};

    fn snapshot() -> ApacheSnapshot {
        let mut s = ApacheSnapshot {
            cluster: "C\"1".into(),
            node_id: "broker-a".into(),
            now_ms: 10_000,
            broker_permission: 6,
            topics: 3,
            consumer_groups: 2,
            flush_behind_bytes: 4096,
            earliest_store_ms: 4_000,
            storage_used_bytes: Some(1 << 20),
            ..ApacheSnapshot::default()
        };
        let mut size = Histogram::default();
        size.merge(&Histogram {
            buckets: vec![2, 1, 0, 0, 0, 0, 0],
            sum: 3000,
            count: 3,
        });
        s.messages_in.insert(
            ("T".into(), 0),
            InFigures {
                messages: 3,
                bytes: 3000,
                size,
            },
        );
        s.messages_out.insert(
            ("T".into(), "CID_RMQ_SYS_X".into()),
            OutFigures {
                messages: 2,
                bytes: 2000,
            },
        );
        s.lag.insert(
            ("%RETRY%G".into(), "G".into()),
            super::super::gather::Lag {
                messages: 5,
                oldest_unconsumed_ms: 7_000,
            },
        );
        s.rpc_latency.insert(
            (310, 0, false),
            Histogram {
                buckets: vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                sum: 5000,
                count: 2,
            },
        );
        s
    }

    #[test]
    fn samples_carry_apaches_labels_in_key_order() {
        let text = render(&snapshot());
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        has("# TYPE rocketmq_messages_in_total counter");
        has("rocketmq_messages_in_total{cluster=\"C\\\"1\",is_system=\"false\",message_type=\"normal\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",topic=\"T\"} 3");
        has("rocketmq_message_size_bucket{cluster=\"C\\\"1\",is_system=\"false\",le=\"1024.0\",message_type=\"normal\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",topic=\"T\"} 2");
        has("rocketmq_message_size_bucket{cluster=\"C\\\"1\",is_system=\"false\",le=\"4096.0\",message_type=\"normal\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",topic=\"T\"} 3");
        has("rocketmq_message_size_bucket{cluster=\"C\\\"1\",is_system=\"false\",le=\"+Inf\",message_type=\"normal\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",topic=\"T\"} 3");
        has("rocketmq_messages_out_total{cluster=\"C\\\"1\",consumer_group=\"CID_RMQ_SYS_X\",is_system=\"true\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",topic=\"T\"} 2");
        has("rocketmq_consumer_lag_latency{cluster=\"C\\\"1\",consumer_group=\"G\",is_retry=\"true\",is_system=\"false\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",topic=\"%RETRY%G\"} 3000");
        has("rocketmq_rpc_latency_bucket{cluster=\"C\\\"1\",is_long_polling=\"false\",le=\"1.0\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",protocol_type=\"remoting\",request_code=\"send_message_v2\",response_code=\"success\",result=\"success\"} 1");
        has("rocketmq_rpc_latency_bucket{cluster=\"C\\\"1\",is_long_polling=\"false\",le=\"3000.0\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",protocol_type=\"remoting\",request_code=\"send_message_v2\",response_code=\"success\",result=\"success\"} 1");
        has("rocketmq_rpc_latency_count{cluster=\"C\\\"1\",is_long_polling=\"false\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",protocol_type=\"remoting\",request_code=\"send_message_v2\",response_code=\"success\",result=\"success\"} 2");
        has("rocketmq_storage_message_reserve_time{cluster=\"C\\\"1\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",storage_medium=\"disk\",storage_type=\"local\"} 6000");
        has("rocketmq_storage_flush_behind_bytes{cluster=\"C\\\"1\",node_id=\"broker-a\",node_type=\"broker\",otel_scope_name=\"broker-meter\",storage_medium=\"disk\",storage_type=\"local\"} 4096");
        // Apache 5.1.4+'s names (OpenTelemetry 1.29 appends units) on request.
        let mut suffixed = snapshot();
        suffixed.unit_suffix = true;
        let text2 = render(&suffixed);
        for name in [
            "# TYPE rocketmq_rpc_latency_milliseconds histogram",
            "# TYPE rocketmq_consumer_lag_latency_milliseconds gauge",
            "# TYPE rocketmq_consumer_queueing_latency_milliseconds gauge",
            "# TYPE rocketmq_storage_message_reserve_time_milliseconds gauge",
            "# TYPE rocketmq_storage_size_bytes gauge",
            "# TYPE rocketmq_storage_flush_behind_bytes gauge",
            "# TYPE rocketmq_messages_in_total counter",
        ] {
            assert!(text2.lines().any(|l| l == name), "{name}\n{text2}");
        }
        assert!(text2.contains("\nrocketmq_rpc_latency_milliseconds_bucket{"));
        assert!(!text2.contains("\nrocketmq_rpc_latency_bucket{"));
        // Every family is declared once, before its samples.
        let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
        assert_eq!(types, helps);
    }
}
