//! Prometheus text exposition format (version 0.0.4) of a scrape's [`Snapshot`].

use std::fmt::Write;

use super::gather::Snapshot;
use super::local::PUT_LATENCY_BOUNDS_US;

/// Escapes a label value (backslash, double quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Out {
    text: String,
    base: String,
}

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &str, value: impl std::fmt::Display) {
        let sep = if labels.is_empty() { "" } else { "," };
        let _ = writeln!(self.text, "{name}{{{}{sep}{labels}}} {value}", self.base);
    }
}

pub fn render(s: &Snapshot) -> String {
    let mut o = Out {
        text: String::new(),
        base: format!(
            "cluster=\"{}\",broker=\"{}\"",
            escape(&s.cluster),
            escape(&s.broker_name)
        ),
    };
    let shard_counter =
        |o: &mut Out,
         name: &str,
         help: &str,
         f: &dyn Fn(&crate::shard::stats::ShardStats) -> u64| {
            o.family(name, "counter", help);
            for sh in &s.shards {
                o.sample(name, &format!("shard=\"{}\"", sh.shard), f(sh));
            }
        };
    shard_counter(
        &mut o,
        "rocketmq_put_messages_total",
        "Messages stored, per shard (rate() gives put TPS).",
        &|x| x.msgs_put,
    );
    shard_counter(
        &mut o,
        "rocketmq_put_bytes_total",
        "Message body bytes stored, per shard.",
        &|x| x.bytes_put,
    );
    shard_counter(
        &mut o,
        "rocketmq_send_errors_total",
        "Send requests answered with an error, per shard.",
        &|x| x.send_errors,
    );
    shard_counter(
        &mut o,
        "rocketmq_pull_messages_total",
        "Messages returned to pulls, per shard.",
        &|x| x.msgs_got,
    );
    shard_counter(
        &mut o,
        "rocketmq_pull_bytes_total",
        "Bytes returned to pulls, per shard.",
        &|x| x.bytes_got,
    );
    shard_counter(
        &mut o,
        "rocketmq_store_busy_rejects_total",
        "Puts refused because the store was busy, per shard.",
        &|x| x.store.busy_rejects,
    );
    shard_counter(
        &mut o,
        "rocketmq_store_flush_timeouts_total",
        "SYNC_FLUSH puts that timed out waiting for fdatasync, per shard.",
        &|x| x.store.flush_timeouts,
    );
    shard_counter(
        &mut o,
        "rocketmq_store_disk_reads_total",
        "Reads served from disk (DMA) instead of memory, per shard.",
        &|x| x.store.disk_reads,
    );

    // Group commit: every flush round is one write + fdatasync covering a batch of records.
    o.family(
        "rocketmq_fdatasync_seconds",
        "summary",
        "CommitLog write+fdatasync rounds (group commit), per shard.",
    );
    for sh in &s.shards {
        let l = format!("shard=\"{}\"", sh.shard);
        o.sample(
            "rocketmq_fdatasync_seconds_sum",
            &l,
            sh.store.fsync_nanos_total as f64 / 1e9,
        );
        o.sample("rocketmq_fdatasync_seconds_count", &l, sh.store.fsyncs);
    }
    o.family(
        "rocketmq_fdatasync_max_seconds",
        "gauge",
        "Longest write+fdatasync round since start, per shard.",
    );
    for sh in &s.shards {
        o.sample(
            "rocketmq_fdatasync_max_seconds",
            &format!("shard=\"{}\"", sh.shard),
            sh.store.fsync_nanos_max as f64 / 1e9,
        );
    }
    o.family(
        "rocketmq_group_commit_records",
        "summary",
        "Records per group-commit flush round (sum / count = mean batch), per shard.",
    );
    for sh in &s.shards {
        let l = format!("shard=\"{}\"", sh.shard);
        o.sample(
            "rocketmq_group_commit_records_sum",
            &l,
            sh.store.group_commit_records,
        );
        o.sample("rocketmq_group_commit_records_count", &l, sh.store.fsyncs);
    }
    o.family(
        "rocketmq_group_commit_max_records",
        "gauge",
        "Largest group-commit batch since start, per shard.",
    );
    for sh in &s.shards {
        o.sample(
            "rocketmq_group_commit_max_records",
            &format!("shard=\"{}\"", sh.shard),
            sh.store.group_commit_max,
        );
    }

    o.family(
        "rocketmq_put_latency_seconds",
        "histogram",
        "Send request time from decode to answer, per receiving shard.",
    );
    for m in &s.local {
        let mut cumulative = 0u64;
        for (i, count) in m.put_latency_buckets.iter().enumerate() {
            cumulative = cumulative.saturating_add(*count);
            let le = match PUT_LATENCY_BOUNDS_US.get(i) {
                Some(us) => format!("{}", *us as f64 / 1e6),
                None => "+Inf".to_owned(),
            };
            o.sample(
                "rocketmq_put_latency_seconds_bucket",
                &format!("shard=\"{}\",le=\"{le}\"", m.shard),
                cumulative,
            );
        }
        let l = format!("shard=\"{}\"", m.shard);
        o.sample(
            "rocketmq_put_latency_seconds_sum",
            &l,
            m.put_latency_sum_us as f64 / 1e6,
        );
        o.sample("rocketmq_put_latency_seconds_count", &l, m.put_requests);
    }
    o.family(
        "rocketmq_pull_parked",
        "gauge",
        "Long-polling pulls parked waiting for messages, per shard.",
    );
    for m in &s.local {
        o.sample(
            "rocketmq_pull_parked",
            &format!("shard=\"{}\"", m.shard),
            m.pull_parked,
        );
    }
    o.family(
        "rocketmq_connections",
        "gauge",
        "Open client connections, per shard.",
    );
    for m in &s.local {
        o.sample(
            "rocketmq_connections",
            &format!("shard=\"{}\"", m.shard),
            m.connections_open,
        );
    }
    o.family(
        "rocketmq_connections_accepted_total",
        "counter",
        "Client connections accepted, per shard.",
    );
    for m in &s.local {
        o.sample(
            "rocketmq_connections_accepted_total",
            &format!("shard=\"{}\"", m.shard),
            m.connections_accepted,
        );
    }

    o.family(
        "rocketmq_consumer_backlog_messages",
        "gauge",
        "Messages not yet consumed (max offset - committed offset, summed over queues).",
    );
    for ((topic, group), lag) in &s.backlog {
        o.sample(
            "rocketmq_consumer_backlog_messages",
            &format!("topic=\"{}\",group=\"{}\"", escape(topic), escape(group)),
            lag,
        );
    }
    if let Some(c) = &s.controller {
        for (name, help, value) in [
            (
                "rocketmq_controller_is_master",
                "1 while the controllers have made this broker its group's master.",
                u64::from(c.is_master),
            ),
            (
                "rocketmq_controller_master_epoch",
                "The group's master epoch, as the controllers last said.",
                u64::try_from(c.master_epoch).unwrap_or(0),
            ),
            (
                "rocketmq_controller_sync_state_set_size",
                "Replicas in the group's SyncStateSet (the master included).",
                c.sync_state_set_size as u64,
            ),
        ] {
            o.family(name, "gauge", help);
            o.sample(name, "", value);
        }
        o.family(
            "rocketmq_controller_role_changes_total",
            "counter",
            "Roles the controllers gave this broker since its start, the first one included.",
        );
        o.sample("rocketmq_controller_role_changes_total", "", c.role_changes);
    }
    if s.is_slave {
        o.family(
            "rocketmq_ha_slave_connected",
            "gauge",
            "1 when this slave's shard is connected to its master's HA stream.",
        );
        for sh in &s.shards {
            let l = format!("shard=\"{}\"", sh.shard);
            o.sample(
                "rocketmq_ha_slave_connected",
                &l,
                u8::from(sh.ha.slave_connected),
            );
        }
    } else {
        o.family(
            "rocketmq_ha_slaves",
            "gauge",
            "Slaves connected to this master's shard stream.",
        );
        for sh in &s.shards {
            o.sample(
                "rocketmq_ha_slaves",
                &format!("shard=\"{}\"", sh.shard),
                sh.ha.slaves,
            );
        }
        // HA tracks the best slave's acknowledged offset per shard stream.
        o.family(
            "rocketmq_ha_slave_lag_bytes",
            "gauge",
            "Bytes the best connected slave is behind this master, per shard (no sample without a slave).",
        );
        for sh in s.shards.iter().filter(|sh| sh.ha.slaves > 0) {
            let l = format!("shard=\"{}\"", sh.shard);
            o.sample("rocketmq_ha_slave_lag_bytes", &l, sh.ha.behind_bytes);
        }
        o.family(
            "rocketmq_ha_slave_lag_seconds",
            "gauge",
            "How long ago the best slave last held everything this master had, per shard.",
        );
        for sh in s.shards.iter().filter(|sh| sh.ha.slaves > 0) {
            let l = format!("shard=\"{}\"", sh.shard);
            o.sample(
                "rocketmq_ha_slave_lag_seconds",
                &l,
                sh.ha.behind_ms as f64 / 1e3,
            );
        }
    }

    o.family(
        "rocketmq_store_commitlog_bytes",
        "gauge",
        "CommitLog bytes held (max - min physical offset), per shard.",
    );
    for sh in &s.shards {
        let held = sh
            .commit_log_max_offset
            .saturating_sub(sh.commit_log_min_offset)
            .max(0);
        o.sample(
            "rocketmq_store_commitlog_bytes",
            &format!("shard=\"{}\"", sh.shard),
            held,
        );
    }
    o.family(
        "rocketmq_store_read_only",
        "gauge",
        "1 while the shard's store refuses writes (failed disk write or sync, full disk; the reason is in the log and in GET_BROKER_RUNTIME_INFO storeReadOnlyReason).",
    );
    for sh in &s.shards {
        o.sample(
            "rocketmq_store_read_only",
            &format!("shard=\"{}\"", sh.shard),
            u8::from(sh.read_only.is_some()),
        );
    }
    o.family(
        "rocketmq_store_queues",
        "gauge",
        "Consume queues, per shard.",
    );
    for sh in &s.shards {
        o.sample(
            "rocketmq_store_queues",
            &format!("shard=\"{}\"", sh.shard),
            sh.queues,
        );
    }
    if let Some(d) = s.disk {
        o.family(
            "rocketmq_store_disk_total_bytes",
            "gauge",
            "Size of the filesystem holding storePathRootDir.",
        );
        o.sample("rocketmq_store_disk_total_bytes", "", d.total_bytes);
        o.family(
            "rocketmq_store_disk_free_bytes",
            "gauge",
            "Free bytes (for unprivileged users) on that filesystem.",
        );
        o.sample("rocketmq_store_disk_free_bytes", "", d.free_bytes);
        o.family(
            "rocketmq_store_disk_used_ratio",
            "gauge",
            "Used fraction of that filesystem (compare with diskMaxUsedSpaceRatio).",
        );
        let used = if d.total_bytes == 0 {
            0.0
        } else {
            1.0 - d.free_bytes as f64 / d.total_bytes as f64
        };
        o.sample("rocketmq_store_disk_used_ratio", "", used);
    }
    o.text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature::metrics::gather::{DiskFigures, LocalFigures};
    use crate::shard::stats::ShardStats;

    #[test]
    fn exposition_has_every_family_and_cumulative_buckets() {
        let mut snap = Snapshot {
            broker_name: "broker-a".into(),
            cluster: "C".into(),
            ..Snapshot::default()
        };
        let mut sh = ShardStats {
            shard: 1,
            msgs_put: 42,
            bytes_put: 4200,
            ..ShardStats::default()
        };
        sh.store.fsyncs = 4;
        sh.store.group_commit_records = 42;
        snap.shards.push(sh);
        let mut buckets = vec![0u64; PUT_LATENCY_BOUNDS_US.len() + 1];
        buckets[0] = 2;
        buckets[3] = 3;
        snap.local.push(LocalFigures {
            shard: 1,
            put_latency_buckets: buckets,
            put_requests: 5,
            ..LocalFigures::default()
        });
        snap.backlog.insert(("T\"x".into(), "G".into()), 7);
        snap.disk = Some(DiskFigures {
            total_bytes: 100,
            free_bytes: 25,
        });
        let text = render(&snap);
        assert!(
            text.contains(
                "rocketmq_put_messages_total{cluster=\"C\",broker=\"broker-a\",shard=\"1\"} 42\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "rocketmq_group_commit_records_sum{cluster=\"C\",broker=\"broker-a\",shard=\"1\"} 42\n"
        ));
        assert!(text.contains("shard=\"1\",le=\"0.00005\"} 2\n"), "{text}");
        assert!(text.contains("shard=\"1\",le=\"0.0005\"} 5\n"), "{text}");
        assert!(text.contains("shard=\"1\",le=\"+Inf\"} 5\n"));
        assert!(text.contains("topic=\"T\\\"x\",group=\"G\"} 7\n"), "{text}");
        assert!(
            text.contains(
                "rocketmq_store_disk_used_ratio{cluster=\"C\",broker=\"broker-a\"} 0.75\n"
            ),
            "{text}"
        );
        assert!(text.contains("# TYPE rocketmq_ha_slave_lag_bytes gauge\n"));
        // No slave on shard 1: no lag sample; with one, its lag.
        assert!(!text.contains("rocketmq_ha_slave_lag_bytes{"), "{text}");
        snap.shards[0].ha.slaves = 1;
        snap.shards[0].ha.behind_bytes = 123;
        let text = render(&snap);
        assert!(
            text.contains(
                "rocketmq_ha_slave_lag_bytes{cluster=\"C\",broker=\"broker-a\",shard=\"1\"} 123\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("rocketmq_ha_slaves{cluster=\"C\",broker=\"broker-a\",shard=\"1\"} 1\n")
        );
        snap.controller = Some(crate::role::replica_state::ReplicaFigures {
            is_master: true,
            master_epoch: 3,
            sync_state_set_size: 2,
            role_changes: 1,
        });
        let text = render(&snap);
        assert!(
            text.contains(
                "rocketmq_controller_master_epoch{cluster=\"C\",broker=\"broker-a\"} 3\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "rocketmq_controller_sync_state_set_size{cluster=\"C\",broker=\"broker-a\"} 2\n"
        ));
        snap.is_slave = true;
        snap.shards[0].ha.slave_connected = true;
        let text = render(&snap);
        assert!(
            text.contains(
                "rocketmq_ha_slave_connected{cluster=\"C\",broker=\"broker-a\",shard=\"1\"} 1\n"
            ),
            "{text}"
        );
        // Every sample line is `name{labels} value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }
}
