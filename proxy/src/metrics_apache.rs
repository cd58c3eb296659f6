//! Apache RocketMQ 5's proxy metrics by Apache's names, with `metricsExporterType = PROM`: the series
//! Apache's proxy registers (`rocketmq_proxy_up`, a gauge of 1) and `rocketmq_rpc_latency` for every
//! gRPC request, with Apache's type, unit, histogram buckets and labels (`cluster` = proxyClusterName,
//! `node_type = "proxy"`, `node_id` = proxyName, `protocol_type = "grpc"`, `request_code` = the RPC in
//! snake case, `response_code` = the answer's status code in lower case), in Prometheus text as
//! OpenTelemetry's exporter prints them (meter `broker-meter`, labels in key order). Apache's proxy in
//! cluster mode measures no gRPC latency of its own; the histogram has its broker's shape so the
//! same panels (rpc p99 per request code) work on both.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Apache's rpc latency buckets (ms), as its RemotingMetricsManager declares them.
pub const RPC_LATENCY_BOUNDS_MS: [u64; 9] = [1, 3, 5, 7, 10, 100, 1_000, 2_000, 3_000];
/// OpenTelemetry's scope label: the meter Apache's proxy records with.
const SCOPE: &str = "broker-meter";

/// The labels every series carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLabels {
    pub cluster: String,
    pub node_id: String,
    /// `metricsLabel`'s extra `key:value` pairs.
    pub extra: Vec<(String, String)>,
    /// `metricsPromUnitSuffix` (ours): `rocketmq_rpc_latency_milliseconds`, as OpenTelemetry 1.29's
    /// exporter (Apache 5.1.4+) prints it.
    pub unit_suffix: bool,
}

#[derive(Default, Clone)]
struct Histogram {
    buckets: [u64; RPC_LATENCY_BOUNDS_MS.len() + 1],
    sum_ms: u64,
    count: u64,
}

/// The rpc latency histograms, per (RPC, status code).
#[derive(Default)]
pub struct RpcLatency {
    series: Mutex<BTreeMap<(&'static str, i32), Histogram>>,
}

impl RpcLatency {
    pub fn record(&self, method: &'static str, code: i32, took: Duration) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let bucket = RPC_LATENCY_BOUNDS_MS
            .iter()
            .position(|b| ms <= *b)
            .unwrap_or(RPC_LATENCY_BOUNDS_MS.len());
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        let h = series.entry((method, code)).or_default();
        if let Some(b) = h.buckets.get_mut(bucket) {
            *b += 1;
        }
        h.sum_ms = h.sum_ms.saturating_add(ms);
        h.count += 1;
    }

    /// The Prometheus text of `rocketmq_proxy_up` and `rocketmq_rpc_latency`.
    pub fn render(&self, node: &NodeLabels) -> String {
        let series = self
            .series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut out = String::new();
        let common = |labels: &[(&str, String)]| -> String {
            let mut all: Vec<(String, String)> = vec![
                ("cluster".into(), node.cluster.clone()),
                ("node_id".into(), node.node_id.clone()),
                ("node_type".into(), "proxy".into()),
                ("otel_scope_name".into(), SCOPE.into()),
            ];
            all.extend(node.extra.iter().cloned());
            all.extend(labels.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
            all.sort();
            let body: Vec<String> = all
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            body.join(",")
        };
        let _ = writeln!(out, "# HELP rocketmq_proxy_up proxy status");
        let _ = writeln!(out, "# TYPE rocketmq_proxy_up gauge");
        let _ = writeln!(
            out,
            "rocketmq_proxy_up{{{}}} 1",
            common(&[("proxy_mode", "cluster".into())])
        );
        let name = if node.unit_suffix {
            "rocketmq_rpc_latency_milliseconds"
        } else {
            "rocketmq_rpc_latency"
        };
        let _ = writeln!(out, "# HELP {name} Rpc latency");
        let _ = writeln!(out, "# TYPE {name} histogram");
        for ((method, code), h) in &series {
            let labels = [
                ("protocol_type", "grpc".to_owned()),
                ("is_long_polling", "false".to_owned()),
                ("request_code", snake_case(method)),
                ("response_code", code_name(*code)),
                ("result", "success".to_owned()),
            ];
            let mut cumulative = 0u64;
            for (i, n) in h.buckets.iter().enumerate() {
                cumulative += n;
                let le = RPC_LATENCY_BOUNDS_MS
                    .get(i)
                    .map_or_else(|| "+Inf".to_owned(), |b| format!("{b}.0"));
                let mut with_le = labels.to_vec();
                with_le.push(("le", le));
                let _ = writeln!(out, "{name}_bucket{{{}}} {cumulative}", common(&with_le));
            }
            let _ = writeln!(out, "{name}_sum{{{}}} {}", common(&labels), h.sum_ms);
            let _ = writeln!(out, "{name}_count{{{}}} {}", common(&labels), h.count);
        }
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `SendMessage` -> `send_message` (Apache's request codes read in snake case).
fn snake_case(method: &str) -> String {
    let mut out = String::with_capacity(method.len() + 4);
    for (i, ch) in method.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// A status code as its name in lower case (`ok`, `topic_not_found`); unknown ones as their number.
fn code_name(code: i32) -> String {
    crate::pb::Code::try_from(code)
        .map(|c| c.as_str_name().to_ascii_lowercase())
        .unwrap_or_else(|_| code.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_apaches_names_buckets_and_labels() {
        let m = RpcLatency::default();
        m.record("SendMessage", 20000, Duration::from_micros(500));
        m.record("SendMessage", 20000, Duration::from_millis(4));
        m.record("SendMessage", 20000, Duration::from_secs(5));
        m.record("RecallMessage", 40401, Duration::from_millis(2));
        let node = NodeLabels {
            cluster: "DefaultCluster".into(),
            node_id: "proxy-a".into(),
            extra: vec![("env".into(), "test".into())],
            unit_suffix: false,
        };
        let text = m.render(&node);
        let common = "cluster=\"DefaultCluster\",env=\"test\"";
        assert!(text.contains(&format!(
            "rocketmq_proxy_up{{{common},node_id=\"proxy-a\",node_type=\"proxy\",otel_scope_name=\"broker-meter\",proxy_mode=\"cluster\"}} 1"
        )));
        let send = "is_long_polling=\"false\",node_id=\"proxy-a\",node_type=\"proxy\",otel_scope_name=\"broker-meter\",protocol_type=\"grpc\",request_code=\"send_message\",response_code=\"ok\",result=\"success\"";
        for (le, n) in [("1.0", 1), ("5.0", 2), ("3000.0", 2), ("+Inf", 3)] {
            let line = format!(
                "rocketmq_rpc_latency_bucket{{{common},{send_le}}} {n}",
                send_le = send.replace(
                    "is_long_polling=\"false\",",
                    &format!("is_long_polling=\"false\",le=\"{le}\",")
                )
            );
            assert!(text.contains(&line), "{line} in\n{text}");
        }
        assert!(text.contains(&format!("rocketmq_rpc_latency_count{{{common},{send}}} 3")));
        assert!(text.contains(&format!("rocketmq_rpc_latency_sum{{{common},{send}}} 5004")));
        assert!(
            text.contains("request_code=\"recall_message\",response_code=\"message_not_found\"")
        );
        assert!(text.contains("# TYPE rocketmq_rpc_latency histogram"));
        let suffixed = m.render(&NodeLabels {
            unit_suffix: true,
            ..node
        });
        assert!(suffixed.contains("# TYPE rocketmq_rpc_latency_milliseconds histogram"));
        assert!(!suffixed.contains("\nrocketmq_rpc_latency_bucket"));
    }
}
