//! Live figures for the charts: each broker process's Prometheus endpoint (its `metricsPort`, learnt
//! from GET_BROKER_CONFIG) is scraped and reduced to the counters the page turns into rates
//! (messages put and pulled, put latency sum, count and buckets).

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// Sum of every sample of metric `name` (all label sets).
pub fn sum(text: &str, name: &str) -> f64 {
    samples(text, name).map(|(_, v)| v).sum()
}

/// (labels, value) of each sample of `name`.
fn samples<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(move |l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, labels) = match series.split_once('{') {
                Some((m, rest)) => (m, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            (metric == name).then_some(())?;
            Some((labels, value.parse::<f64>().ok()?))
        })
}

/// The `le` buckets of histogram `name`, summed over its other labels, in increasing order.
pub fn buckets(text: &str, name: &str) -> Vec<(f64, f64)> {
    let bucket = format!("{name}_bucket");
    let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for (labels, value) in samples(text, &bucket) {
        let le = labels.split(',').find_map(|l| {
            let v = l.trim().strip_prefix("le=\"")?.trim_end_matches('"');
            if v == "+Inf" {
                Some(f64::INFINITY)
            } else {
                v.parse::<f64>().ok()
            }
        });
        if let Some(le) = le {
            // Ordered by the bits of the (non-negative) bound, which sort as the numbers do.
            let entry = by_le.entry(le.to_bits()).or_insert((le, 0.0));
            entry.1 += value;
        }
    }
    by_le.into_values().collect()
}

/// The counters one scrape gives the charts.
pub fn summary(text: &str) -> Value {
    let latency = "rocketmq_put_latency_seconds";
    let buckets: Vec<Value> = buckets(text, latency)
        .into_iter()
        .map(|(le, count)| {
            json!([
                if le.is_finite() {
                    json!(le)
                } else {
                    json!("+Inf")
                },
                count
            ])
        })
        .collect();
    json!({
        "putMessages": sum(text, "rocketmq_put_messages_total"),
        "pullMessages": sum(text, "rocketmq_pull_messages_total"),
        "sendErrors": sum(text, "rocketmq_send_errors_total"),
        "putLatencySum": sum(text, &format!("{latency}_sum")),
        "putLatencyCount": sum(text, &format!("{latency}_count")),
        "putLatencyBuckets": buckets,
        "backlog": sum(text, "rocketmq_consumer_backlog_messages"),
        "connections": sum(text, "rocketmq_connections"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP rocketmq_put_messages_total x\n\
        rocketmq_put_messages_total{broker=\"a\",shard=\"0\"} 5\n\
        rocketmq_put_messages_total{broker=\"a\",shard=\"1\"} 7\n\
        rocketmq_put_messages_totalx{broker=\"a\"} 100\n\
        rocketmq_put_latency_seconds_bucket{broker=\"a\",shard=\"0\",le=\"0.001\"} 3\n\
        rocketmq_put_latency_seconds_bucket{broker=\"a\",shard=\"1\",le=\"0.001\"} 1\n\
        rocketmq_put_latency_seconds_bucket{broker=\"a\",shard=\"0\",le=\"+Inf\"} 5\n\
        rocketmq_put_latency_seconds_bucket{broker=\"a\",shard=\"1\",le=\"+Inf\"} 7\n\
        rocketmq_put_latency_seconds_sum{broker=\"a\",shard=\"0\"} 0.5\n\
        rocketmq_put_latency_seconds_count{broker=\"a\",shard=\"0\"} 12\n\
        rocketmq_store_disk_used_ratio 0.25\n";

    #[test]
    fn samples_are_summed_by_name_and_buckets_by_bound() {
        assert_eq!(sum(TEXT, "rocketmq_put_messages_total"), 12.0);
        assert_eq!(sum(TEXT, "rocketmq_store_disk_used_ratio"), 0.25);
        assert_eq!(sum(TEXT, "missing"), 0.0);
        assert_eq!(
            buckets(TEXT, "rocketmq_put_latency_seconds"),
            vec![(0.001, 4.0), (f64::INFINITY, 12.0)]
        );
        let s = summary(TEXT);
        assert_eq!(s["putMessages"], 12.0);
        assert_eq!(s["putLatencyCount"], 12.0);
        assert_eq!(s["putLatencyBuckets"][1][0], "+Inf");
    }
}
