//! Prometheus text exposition format (version 0.0.4) of a scrape's [`Snapshot`].

use std::fmt::{self, Display, Write};

use super::gather::Snapshot;
use crate::feature::metrics::figures::{DiskFigures, LocalFigures};
use crate::feature::metrics::local::PUT_LATENCY_BOUNDS_US;
use crate::replication::replica_state::ReplicaFigures;
use crate::shard::stats::ShardStats;
use storage::retention_audit::DeleteRule;

/// Escapes a label value (backslash, double quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample's value, printed as the figure's own type prints it (a `u64` past 2^53 stays exact).
#[derive(Clone, Copy)]
enum Value {
    U(u64),
    I(i64),
    F(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::U(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::U(v as u64)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::I(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::F(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::U(u64::from(v))
    }
}

impl Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U(v) => v.fmt(f),
            Value::I(v) => v.fmt(f),
            Value::F(v) => v.fmt(f),
        }
    }
}

/// Where a family's samples come from.
enum Read {
    /// One sample per shard.
    Shard(fn(&ShardStats) -> Value),
    /// One sample per shard with a slave connected (a lag means nothing without one).
    ShardWithSlave(fn(&ShardStats) -> Value),
    /// `_sum` and `_count` per shard.
    ShardSummary {
        sum: fn(&ShardStats) -> Value,
        count: fn(&ShardStats) -> Value,
    },
    /// One sample per shard's hot-path slot.
    Local(fn(&LocalFigures) -> Value),
    /// Cumulative `_bucket`s, `_sum` and `_count` of the put latency, per hot-path slot.
    PutLatency,
    /// One sample per (topic, group).
    Backlog,
    /// One unlabelled sample, in controller mode only (no family otherwise).
    Controller(fn(&ReplicaFigures) -> Value),
    /// One unlabelled sample, when the disk figures are known (no family otherwise).
    Disk(fn(&DiskFigures) -> Value),
    /// One sample per shard and kind of request it sent to another shard.
    RequestsSent,
    /// One sample per shard and retention rule (`storage::retention_audit::DeleteRule`).
    RetentionDeleted,
}

/// Which role's brokers show a family: HA figures are the master side's or the slave side's.
enum Role {
    Any,
    Master,
    Slave,
}

/// One metric family.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    role: Role,
    read: Read,
}

/// A family every broker shows.
const fn family(name: &'static str, kind: &'static str, help: &'static str, read: Read) -> Family {
    Family {
        name,
        kind,
        help,
        role: Role::Any,
        read,
    }
}

impl Family {
    /// The family on brokers of `role` only.
    const fn only(self, role: Role) -> Family {
        Family { role, ..self }
    }
}

/// Every family, in the order the exposition prints them. Kept by hand at a few lines a family:
/// rustfmt would put every argument on a line of its own.
#[rustfmt::skip]
const FAMILIES: &[Family] = &[
    family("rocketmq_put_messages_total", "counter",
        "Messages stored, per shard (rate() gives put TPS).",
        Read::Shard(|x| x.msgs_put.into())),
    family("rocketmq_put_bytes_total", "counter",
        "Message body bytes stored, per shard.",
        Read::Shard(|x| x.bytes_put.into())),
    family("rocketmq_send_errors_total", "counter",
        "Send requests answered with an error, per shard.",
        Read::Shard(|x| x.send_errors.into())),
    family("rocketmq_pull_messages_total", "counter",
        "Messages returned to pulls, per shard.",
        Read::Shard(|x| x.msgs_got.into())),
    family("rocketmq_pull_bytes_total", "counter",
        "Bytes returned to pulls, per shard.",
        Read::Shard(|x| x.bytes_got.into())),
    family("rocketmq_store_busy_rejects_total", "counter",
        "Puts refused because the store was busy, per shard.",
        Read::Shard(|x| x.store.busy_rejects.into())),
    family("rocketmq_store_flush_timeouts_total", "counter",
        "SYNC_FLUSH puts that timed out waiting for fdatasync, per shard.",
        Read::Shard(|x| x.store.flush_timeouts.into())),
    family("rocketmq_store_disk_reads_total", "counter",
        "Reads served from disk (DMA) instead of memory, per shard.",
        Read::Shard(|x| x.store.disk_reads.into())),
    // Group commit: every flush round is one write + fdatasync covering a batch of records.
    family("rocketmq_fdatasync_seconds", "summary",
        "CommitLog write+fdatasync rounds (group commit), per shard.",
        Read::ShardSummary {
            sum: |x| (x.store.fsync_nanos_total as f64 / 1e9).into(),
            count: |x| x.store.fsyncs.into(),
        }),
    family("rocketmq_fdatasync_max_seconds", "gauge",
        "Longest write+fdatasync round since start, per shard.",
        Read::Shard(|x| (x.store.fsync_nanos_max as f64 / 1e9).into())),
    family("rocketmq_group_commit_records", "summary",
        "Records per group-commit flush round (sum / count = mean batch), per shard.",
        Read::ShardSummary {
            sum: |x| x.store.group_commit_records.into(),
            count: |x| x.store.fsyncs.into(),
        }),
    family("rocketmq_group_commit_max_records", "gauge",
        "Largest group-commit batch since start, per shard.",
        Read::Shard(|x| x.store.group_commit_max.into())),
    family("rocketmq_put_latency_seconds", "histogram",
        "Send request time from decode to answer, per receiving shard.",
        Read::PutLatency),
    family("rocketmq_pull_parked", "gauge",
        "Long-polling pulls parked waiting for messages, per shard.",
        Read::Local(|m| m.pull_parked.into())),
    family("rocketmq_connections", "gauge",
        "Open client connections, per shard.",
        Read::Local(|m| m.connections_open.into())),
    family("rocketmq_connections_accepted_total", "counter",
        "Client connections accepted, per shard.",
        Read::Local(|m| m.connections_accepted.into())),
    family("rocketmq_consumer_backlog_messages", "gauge",
        "Messages not yet consumed (max offset - committed offset, summed over queues).",
        Read::Backlog),
    family("rocketmq_controller_is_master", "gauge",
        "1 while the controllers have made this broker its group's master.",
        Read::Controller(|c| c.is_master.into())),
    family("rocketmq_controller_master_epoch", "gauge",
        "The group's master epoch, as the controllers last said.",
        Read::Controller(|c| u64::try_from(c.master_epoch).unwrap_or(0).into())),
    family("rocketmq_controller_sync_state_set_size", "gauge",
        "Replicas in the group's SyncStateSet (the master included).",
        Read::Controller(|c| c.sync_state_set_size.into())),
    family("rocketmq_controller_role_changes_total", "counter",
        "Roles the controllers gave this broker since its start, the first one included.",
        Read::Controller(|c| c.role_changes.into())),
    family("rocketmq_ha_slave_connected", "gauge",
        "1 when this slave's shard is connected to its master's HA stream.",
        Read::Shard(|x| x.ha.slave_connected.into())).only(Role::Slave),
    family("rocketmq_ha_slaves", "gauge",
        "Slaves connected to this master's shard stream.",
        Read::Shard(|x| x.ha.slaves.into())).only(Role::Master),
    // HA tracks the best slave's acknowledged offset per shard stream.
    family("rocketmq_ha_slave_lag_bytes", "gauge",
        "Bytes the best connected slave is behind this master, per shard (no sample without a slave).",
        Read::ShardWithSlave(|x| x.ha.behind_bytes.into())).only(Role::Master),
    family("rocketmq_ha_slave_lag_seconds", "gauge",
        "How long ago the best slave last held everything this master had, per shard.",
        Read::ShardWithSlave(|x| (x.ha.behind_ms as f64 / 1e3).into())).only(Role::Master),
    family("rocketmq_store_commitlog_bytes", "gauge",
        "CommitLog bytes held (max - min physical offset), per shard.",
        Read::Shard(|x| {
            x.commit_log_max_offset.saturating_sub(x.commit_log_min_offset).max(0).into()
        })),
    family("rocketmq_store_read_only", "gauge",
        "1 while the shard's store refuses writes (failed disk write or sync, full disk; the reason is in the log and in GET_BROKER_RUNTIME_INFO storeReadOnlyReason).",
        Read::Shard(|x| x.read_only.is_some().into())),
    family("rocketmq_retention_deleted_segments_total", "counter",
        "CommitLog segments deleted by retention, per shard and rule: expired (fileReservedTime, in a deleteWhen hour), expired_disk_pressure (expired, disk above diskMaxUsedSpaceRatio), forced (not expired, disk above diskSpaceCleanForciblyRatio).",
        Read::RetentionDeleted),
    family("rocketmq_retention_unconsumed_messages_total", "counter",
        "Messages retention deleted before a consumer group with a committed offset on their queue consumed them, per shard (each group counted; the log names the groups).",
        Read::Shard(|x| x.store.retention_unconsumed.into())),
    family("rocketmq_store_tail_cut_messages_total", "counter",
        "Messages dropped from consume queues by tail cuts (a returning master's writes of an epoch the new master does not have), per shard; the log names the queues and the groups that had read them.",
        Read::Shard(|x| x.store.tail_cut_messages.into())),
    family("rocketmq_store_queues", "gauge",
        "Consume queues, per shard.",
        Read::Shard(|x| x.queues.into())),
    family("rocketmq_store_disk_total_bytes", "gauge",
        "Size of the filesystem holding storePathRootDir.",
        Read::Disk(|d| d.total_bytes.into())),
    family("rocketmq_store_disk_free_bytes", "gauge",
        "Free bytes (for unprivileged users) on that filesystem.",
        Read::Disk(|d| d.free_bytes.into())),
    family("rocketmq_store_disk_used_ratio", "gauge",
        "Used fraction of that filesystem (compare with diskMaxUsedSpaceRatio).",
        Read::Disk(|d| {
            if d.total_bytes == 0 {
                0.0.into()
            } else {
                (1.0 - d.free_bytes as f64 / d.total_bytes as f64).into()
            }
        })),
    family("rocketmq_broker_cross_core_requests_total", "counter",
        "Requests a shard sent to another shard, per kind (the named requests of shard/requests.rs).",
        Read::RequestsSent),
];

struct Out {
    text: String,
    base: String,
}

impl Out {
    fn sample(&mut self, name: &str, labels: &str, value: impl Display) {
        let sep = if labels.is_empty() { "" } else { "," };
        let _ = writeln!(self.text, "{name}{{{}{sep}{labels}}} {value}", self.base);
    }

    /// The family's HELP and TYPE lines and its samples, or nothing where the snapshot has no
    /// part for it.
    fn family(&mut self, s: &Snapshot, f: &Family) {
        let shown = match (&f.role, &f.read) {
            (Role::Master, _) => !s.is_slave,
            (Role::Slave, _) => s.is_slave,
            (_, Read::Controller(_)) => s.controller.is_some(),
            (_, Read::Disk(_)) => s.disk.is_some(),
            _ => true,
        };
        if !shown {
            return;
        }
        let name = f.name;
        let _ = writeln!(self.text, "# HELP {name} {}", f.help);
        let _ = writeln!(self.text, "# TYPE {name} {}", f.kind);
        let shard = |n: usize| format!("shard=\"{n}\"");
        match f.read {
            Read::Shard(read) => {
                for sh in &s.shards {
                    self.sample(name, &shard(sh.shard), read(sh));
                }
            }
            Read::ShardWithSlave(read) => {
                for sh in s.shards.iter().filter(|sh| sh.ha.slaves > 0) {
                    self.sample(name, &shard(sh.shard), read(sh));
                }
            }
            Read::ShardSummary { sum, count } => {
                for sh in &s.shards {
                    let l = shard(sh.shard);
                    self.sample(&format!("{name}_sum"), &l, sum(sh));
                    self.sample(&format!("{name}_count"), &l, count(sh));
                }
            }
            Read::Local(read) => {
                for m in &s.local {
                    self.sample(name, &shard(m.shard), read(m));
                }
            }
            Read::PutLatency => {
                for m in &s.local {
                    let mut cumulative = 0u64;
                    for (i, count) in m.put_latency_buckets.iter().enumerate() {
                        cumulative = cumulative.saturating_add(*count);
                        let le = match PUT_LATENCY_BOUNDS_US.get(i) {
                            Some(us) => format!("{}", *us as f64 / 1e6),
                            None => "+Inf".to_owned(),
                        };
                        let l = format!("shard=\"{}\",le=\"{le}\"", m.shard);
                        self.sample(&format!("{name}_bucket"), &l, cumulative);
                    }
                    let l = shard(m.shard);
                    let sum = m.put_latency_sum_us as f64 / 1e6;
                    self.sample(&format!("{name}_sum"), &l, sum);
                    self.sample(&format!("{name}_count"), &l, m.put_requests);
                }
            }
            Read::Backlog => {
                for ((topic, group), lag) in &s.backlog {
                    let l = format!("topic=\"{}\",group=\"{}\"", escape(topic), escape(group));
                    self.sample(name, &l, lag);
                }
            }
            Read::Controller(read) => {
                if let Some(c) = &s.controller {
                    self.sample(name, "", read(c));
                }
            }
            Read::Disk(read) => {
                if let Some(d) = &s.disk {
                    self.sample(name, "", read(d));
                }
            }
            Read::RetentionDeleted => {
                for sh in &s.shards {
                    let st = &sh.store;
                    for (rule, n) in [
                        (DeleteRule::Expired, st.retention_expired),
                        (DeleteRule::ExpiredDiskPressure, st.retention_disk_pressure),
                        (DeleteRule::Forced, st.retention_forced),
                    ] {
                        let l = format!("shard=\"{}\",rule=\"{rule}\"", sh.shard);
                        self.sample(name, &l, n);
                    }
                }
            }
            Read::RequestsSent => {
                for sh in &s.shards {
                    for (kind, n) in &sh.requests_sent {
                        let l = format!("shard=\"{}\",kind=\"{}\"", sh.shard, escape(kind));
                        self.sample(name, &l, n);
                    }
                }
            }
        }
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
    for f in FAMILIES {
        o.family(s, f);
    }
    o.text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A master in controller mode with two shards (one with a slave), every figure set.
    fn master_snapshot() -> Snapshot {
        let mut snap = Snapshot {
            broker_name: "broker-\"a\"".into(),
            cluster: "C\\1".into(),
            ..Snapshot::default()
        };
        for shard in 0..2u64 {
            let mut sh = ShardStats {
                shard: shard as usize,
                msgs_put: 1000 + shard,
                bytes_put: 2000 + shard,
                msgs_got: 3000 + shard,
                bytes_got: 4000 + shard,
                send_errors: 5 + shard,
                commit_log_min_offset: 100,
                commit_log_max_offset: if shard == 0 { 8292 } else { 50 },
                queues: 8 + shard as usize,
                read_only: (shard == 1).then(|| "disk full".to_owned()),
                ..ShardStats::default()
            };
            sh.store.busy_rejects = 6 + shard;
            sh.store.flush_timeouts = 7 + shard;
            sh.store.disk_reads = 9 + shard;
            sh.store.retention_expired = 3 + shard;
            sh.store.retention_disk_pressure = shard;
            sh.store.retention_forced = 2 * shard;
            sh.store.retention_unconsumed = 500 * shard;
            sh.store.tail_cut_messages = 7 * shard;
            sh.store.fsyncs = 10 + shard;
            sh.store.fsync_nanos_total = 1_500_000_000 + shard;
            sh.store.fsync_nanos_max = 2_250_000 * (shard + 1);
            sh.store.group_commit_records = 77 + shard;
            sh.store.group_commit_max = 12 + shard;
            sh.ha.slaves = 1 - shard as usize;
            sh.ha.behind_bytes = 4096;
            sh.ha.behind_ms = 1500;
            if shard == 1 {
                sh.requests_sent = vec![("process", 3), ("put", 12)];
            }
            snap.shards.push(sh);
        }
        for shard in 0..2usize {
            let mut buckets = vec![0u64; PUT_LATENCY_BOUNDS_US.len() + 1];
            buckets[shard] = 2;
            buckets[3] = 3;
            buckets[PUT_LATENCY_BOUNDS_US.len()] = 1;
            snap.local.push(LocalFigures {
                shard,
                put_latency_buckets: buckets,
                put_latency_sum_us: 1234 + shard as u64,
                put_requests: 6,
                pull_parked: 3 + shard as u64,
                connections_open: 4 + shard as u64,
                connections_accepted: 40 + shard as u64,
            });
        }
        snap.backlog.insert(("T\"x".into(), "G\\y\nz".into()), 7);
        snap.backlog.insert(("U".into(), "G".into()), -2);
        snap.controller = Some(ReplicaFigures {
            is_master: true,
            master_epoch: 3,
            sync_state_set_size: 2,
            role_changes: 1,
        });
        snap.disk = Some(DiskFigures {
            total_bytes: 1000,
            free_bytes: 250,
        });
        snap
    }

    /// A slave of one shard: no controller, a disk of size 0.
    fn slave_snapshot() -> Snapshot {
        let mut snap = master_snapshot();
        snap.shards.truncate(1);
        snap.local.truncate(1);
        snap.shards[0].ha.slave_connected = true;
        snap.is_slave = true;
        snap.controller = None;
        snap.disk = Some(DiskFigures::default());
        snap
    }

    #[test]
    fn exposition_text_is_exactly_as_expected() {
        assert_eq!(render(&master_snapshot()), MASTER_TEXT);
        assert_eq!(render(&slave_snapshot()), SLAVE_TEXT);
        // Without disk figures the disk families are left out, and nothing else.
        let mut no_disk = master_snapshot();
        no_disk.disk = None;
        let disk_at = MASTER_TEXT
            .find("# HELP rocketmq_store_disk_total_bytes")
            .unwrap();
        let after_disk = MASTER_TEXT
            .find("# HELP rocketmq_broker_cross_core_requests_total")
            .unwrap();
        let expected = format!("{}{}", &MASTER_TEXT[..disk_at], &MASTER_TEXT[after_disk..]);
        assert_eq!(render(&no_disk), expected);
    }

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
        snap.controller = Some(ReplicaFigures {
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

    /// `render(&master_snapshot())`, as the exposition has been served.
    const MASTER_TEXT: &str = r#"# HELP rocketmq_put_messages_total Messages stored, per shard (rate() gives put TPS).
# TYPE rocketmq_put_messages_total counter
rocketmq_put_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1000
rocketmq_put_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 1001
# HELP rocketmq_put_bytes_total Message body bytes stored, per shard.
# TYPE rocketmq_put_bytes_total counter
rocketmq_put_bytes_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 2000
rocketmq_put_bytes_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 2001
# HELP rocketmq_send_errors_total Send requests answered with an error, per shard.
# TYPE rocketmq_send_errors_total counter
rocketmq_send_errors_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 5
rocketmq_send_errors_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 6
# HELP rocketmq_pull_messages_total Messages returned to pulls, per shard.
# TYPE rocketmq_pull_messages_total counter
rocketmq_pull_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 3000
rocketmq_pull_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 3001
# HELP rocketmq_pull_bytes_total Bytes returned to pulls, per shard.
# TYPE rocketmq_pull_bytes_total counter
rocketmq_pull_bytes_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 4000
rocketmq_pull_bytes_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 4001
# HELP rocketmq_store_busy_rejects_total Puts refused because the store was busy, per shard.
# TYPE rocketmq_store_busy_rejects_total counter
rocketmq_store_busy_rejects_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 6
rocketmq_store_busy_rejects_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 7
# HELP rocketmq_store_flush_timeouts_total SYNC_FLUSH puts that timed out waiting for fdatasync, per shard.
# TYPE rocketmq_store_flush_timeouts_total counter
rocketmq_store_flush_timeouts_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 7
rocketmq_store_flush_timeouts_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 8
# HELP rocketmq_store_disk_reads_total Reads served from disk (DMA) instead of memory, per shard.
# TYPE rocketmq_store_disk_reads_total counter
rocketmq_store_disk_reads_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 9
rocketmq_store_disk_reads_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 10
# HELP rocketmq_fdatasync_seconds CommitLog write+fdatasync rounds (group commit), per shard.
# TYPE rocketmq_fdatasync_seconds summary
rocketmq_fdatasync_seconds_sum{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1.5
rocketmq_fdatasync_seconds_count{cluster="C\\1",broker="broker-\"a\"",shard="0"} 10
rocketmq_fdatasync_seconds_sum{cluster="C\\1",broker="broker-\"a\"",shard="1"} 1.500000001
rocketmq_fdatasync_seconds_count{cluster="C\\1",broker="broker-\"a\"",shard="1"} 11
# HELP rocketmq_fdatasync_max_seconds Longest write+fdatasync round since start, per shard.
# TYPE rocketmq_fdatasync_max_seconds gauge
rocketmq_fdatasync_max_seconds{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0.00225
rocketmq_fdatasync_max_seconds{cluster="C\\1",broker="broker-\"a\"",shard="1"} 0.0045
# HELP rocketmq_group_commit_records Records per group-commit flush round (sum / count = mean batch), per shard.
# TYPE rocketmq_group_commit_records summary
rocketmq_group_commit_records_sum{cluster="C\\1",broker="broker-\"a\"",shard="0"} 77
rocketmq_group_commit_records_count{cluster="C\\1",broker="broker-\"a\"",shard="0"} 10
rocketmq_group_commit_records_sum{cluster="C\\1",broker="broker-\"a\"",shard="1"} 78
rocketmq_group_commit_records_count{cluster="C\\1",broker="broker-\"a\"",shard="1"} 11
# HELP rocketmq_group_commit_max_records Largest group-commit batch since start, per shard.
# TYPE rocketmq_group_commit_max_records gauge
rocketmq_group_commit_max_records{cluster="C\\1",broker="broker-\"a\"",shard="0"} 12
rocketmq_group_commit_max_records{cluster="C\\1",broker="broker-\"a\"",shard="1"} 13
# HELP rocketmq_put_latency_seconds Send request time from decode to answer, per receiving shard.
# TYPE rocketmq_put_latency_seconds histogram
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.00005"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.0001"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.00025"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.0005"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.001"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.0025"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.005"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.01"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.025"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.05"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.1"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.25"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.5"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="1"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="+Inf"} 6
rocketmq_put_latency_seconds_sum{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0.001234
rocketmq_put_latency_seconds_count{cluster="C\\1",broker="broker-\"a\"",shard="0"} 6
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.00005"} 0
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.0001"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.00025"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.0005"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.001"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.0025"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.005"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.01"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.025"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.05"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.1"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.25"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="0.5"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="1"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="1",le="+Inf"} 6
rocketmq_put_latency_seconds_sum{cluster="C\\1",broker="broker-\"a\"",shard="1"} 0.001235
rocketmq_put_latency_seconds_count{cluster="C\\1",broker="broker-\"a\"",shard="1"} 6
# HELP rocketmq_pull_parked Long-polling pulls parked waiting for messages, per shard.
# TYPE rocketmq_pull_parked gauge
rocketmq_pull_parked{cluster="C\\1",broker="broker-\"a\"",shard="0"} 3
rocketmq_pull_parked{cluster="C\\1",broker="broker-\"a\"",shard="1"} 4
# HELP rocketmq_connections Open client connections, per shard.
# TYPE rocketmq_connections gauge
rocketmq_connections{cluster="C\\1",broker="broker-\"a\"",shard="0"} 4
rocketmq_connections{cluster="C\\1",broker="broker-\"a\"",shard="1"} 5
# HELP rocketmq_connections_accepted_total Client connections accepted, per shard.
# TYPE rocketmq_connections_accepted_total counter
rocketmq_connections_accepted_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 40
rocketmq_connections_accepted_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 41
# HELP rocketmq_consumer_backlog_messages Messages not yet consumed (max offset - committed offset, summed over queues).
# TYPE rocketmq_consumer_backlog_messages gauge
rocketmq_consumer_backlog_messages{cluster="C\\1",broker="broker-\"a\"",topic="T\"x",group="G\\y\nz"} 7
rocketmq_consumer_backlog_messages{cluster="C\\1",broker="broker-\"a\"",topic="U",group="G"} -2
# HELP rocketmq_controller_is_master 1 while the controllers have made this broker its group's master.
# TYPE rocketmq_controller_is_master gauge
rocketmq_controller_is_master{cluster="C\\1",broker="broker-\"a\""} 1
# HELP rocketmq_controller_master_epoch The group's master epoch, as the controllers last said.
# TYPE rocketmq_controller_master_epoch gauge
rocketmq_controller_master_epoch{cluster="C\\1",broker="broker-\"a\""} 3
# HELP rocketmq_controller_sync_state_set_size Replicas in the group's SyncStateSet (the master included).
# TYPE rocketmq_controller_sync_state_set_size gauge
rocketmq_controller_sync_state_set_size{cluster="C\\1",broker="broker-\"a\""} 2
# HELP rocketmq_controller_role_changes_total Roles the controllers gave this broker since its start, the first one included.
# TYPE rocketmq_controller_role_changes_total counter
rocketmq_controller_role_changes_total{cluster="C\\1",broker="broker-\"a\""} 1
# HELP rocketmq_ha_slaves Slaves connected to this master's shard stream.
# TYPE rocketmq_ha_slaves gauge
rocketmq_ha_slaves{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1
rocketmq_ha_slaves{cluster="C\\1",broker="broker-\"a\"",shard="1"} 0
# HELP rocketmq_ha_slave_lag_bytes Bytes the best connected slave is behind this master, per shard (no sample without a slave).
# TYPE rocketmq_ha_slave_lag_bytes gauge
rocketmq_ha_slave_lag_bytes{cluster="C\\1",broker="broker-\"a\"",shard="0"} 4096
# HELP rocketmq_ha_slave_lag_seconds How long ago the best slave last held everything this master had, per shard.
# TYPE rocketmq_ha_slave_lag_seconds gauge
rocketmq_ha_slave_lag_seconds{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1.5
# HELP rocketmq_store_commitlog_bytes CommitLog bytes held (max - min physical offset), per shard.
# TYPE rocketmq_store_commitlog_bytes gauge
rocketmq_store_commitlog_bytes{cluster="C\\1",broker="broker-\"a\"",shard="0"} 8192
rocketmq_store_commitlog_bytes{cluster="C\\1",broker="broker-\"a\"",shard="1"} 0
# HELP rocketmq_store_read_only 1 while the shard's store refuses writes (failed disk write or sync, full disk; the reason is in the log and in GET_BROKER_RUNTIME_INFO storeReadOnlyReason).
# TYPE rocketmq_store_read_only gauge
rocketmq_store_read_only{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0
rocketmq_store_read_only{cluster="C\\1",broker="broker-\"a\"",shard="1"} 1
# HELP rocketmq_retention_deleted_segments_total CommitLog segments deleted by retention, per shard and rule: expired (fileReservedTime, in a deleteWhen hour), expired_disk_pressure (expired, disk above diskMaxUsedSpaceRatio), forced (not expired, disk above diskSpaceCleanForciblyRatio).
# TYPE rocketmq_retention_deleted_segments_total counter
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="0",rule="expired"} 3
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="0",rule="expired_disk_pressure"} 0
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="0",rule="forced"} 0
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="1",rule="expired"} 4
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="1",rule="expired_disk_pressure"} 1
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="1",rule="forced"} 2
# HELP rocketmq_retention_unconsumed_messages_total Messages retention deleted before a consumer group with a committed offset on their queue consumed them, per shard (each group counted; the log names the groups).
# TYPE rocketmq_retention_unconsumed_messages_total counter
rocketmq_retention_unconsumed_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0
rocketmq_retention_unconsumed_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 500
# HELP rocketmq_store_tail_cut_messages_total Messages dropped from consume queues by tail cuts (a returning master's writes of an epoch the new master does not have), per shard; the log names the queues and the groups that had read them.
# TYPE rocketmq_store_tail_cut_messages_total counter
rocketmq_store_tail_cut_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0
rocketmq_store_tail_cut_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="1"} 7
# HELP rocketmq_store_queues Consume queues, per shard.
# TYPE rocketmq_store_queues gauge
rocketmq_store_queues{cluster="C\\1",broker="broker-\"a\"",shard="0"} 8
rocketmq_store_queues{cluster="C\\1",broker="broker-\"a\"",shard="1"} 9
# HELP rocketmq_store_disk_total_bytes Size of the filesystem holding storePathRootDir.
# TYPE rocketmq_store_disk_total_bytes gauge
rocketmq_store_disk_total_bytes{cluster="C\\1",broker="broker-\"a\""} 1000
# HELP rocketmq_store_disk_free_bytes Free bytes (for unprivileged users) on that filesystem.
# TYPE rocketmq_store_disk_free_bytes gauge
rocketmq_store_disk_free_bytes{cluster="C\\1",broker="broker-\"a\""} 250
# HELP rocketmq_store_disk_used_ratio Used fraction of that filesystem (compare with diskMaxUsedSpaceRatio).
# TYPE rocketmq_store_disk_used_ratio gauge
rocketmq_store_disk_used_ratio{cluster="C\\1",broker="broker-\"a\""} 0.75
# HELP rocketmq_broker_cross_core_requests_total Requests a shard sent to another shard, per kind (the named requests of shard/requests.rs).
# TYPE rocketmq_broker_cross_core_requests_total counter
rocketmq_broker_cross_core_requests_total{cluster="C\\1",broker="broker-\"a\"",shard="1",kind="process"} 3
rocketmq_broker_cross_core_requests_total{cluster="C\\1",broker="broker-\"a\"",shard="1",kind="put"} 12
"#;

    /// `render(&slave_snapshot())`.
    const SLAVE_TEXT: &str = r#"# HELP rocketmq_put_messages_total Messages stored, per shard (rate() gives put TPS).
# TYPE rocketmq_put_messages_total counter
rocketmq_put_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1000
# HELP rocketmq_put_bytes_total Message body bytes stored, per shard.
# TYPE rocketmq_put_bytes_total counter
rocketmq_put_bytes_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 2000
# HELP rocketmq_send_errors_total Send requests answered with an error, per shard.
# TYPE rocketmq_send_errors_total counter
rocketmq_send_errors_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 5
# HELP rocketmq_pull_messages_total Messages returned to pulls, per shard.
# TYPE rocketmq_pull_messages_total counter
rocketmq_pull_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 3000
# HELP rocketmq_pull_bytes_total Bytes returned to pulls, per shard.
# TYPE rocketmq_pull_bytes_total counter
rocketmq_pull_bytes_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 4000
# HELP rocketmq_store_busy_rejects_total Puts refused because the store was busy, per shard.
# TYPE rocketmq_store_busy_rejects_total counter
rocketmq_store_busy_rejects_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 6
# HELP rocketmq_store_flush_timeouts_total SYNC_FLUSH puts that timed out waiting for fdatasync, per shard.
# TYPE rocketmq_store_flush_timeouts_total counter
rocketmq_store_flush_timeouts_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 7
# HELP rocketmq_store_disk_reads_total Reads served from disk (DMA) instead of memory, per shard.
# TYPE rocketmq_store_disk_reads_total counter
rocketmq_store_disk_reads_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 9
# HELP rocketmq_fdatasync_seconds CommitLog write+fdatasync rounds (group commit), per shard.
# TYPE rocketmq_fdatasync_seconds summary
rocketmq_fdatasync_seconds_sum{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1.5
rocketmq_fdatasync_seconds_count{cluster="C\\1",broker="broker-\"a\"",shard="0"} 10
# HELP rocketmq_fdatasync_max_seconds Longest write+fdatasync round since start, per shard.
# TYPE rocketmq_fdatasync_max_seconds gauge
rocketmq_fdatasync_max_seconds{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0.00225
# HELP rocketmq_group_commit_records Records per group-commit flush round (sum / count = mean batch), per shard.
# TYPE rocketmq_group_commit_records summary
rocketmq_group_commit_records_sum{cluster="C\\1",broker="broker-\"a\"",shard="0"} 77
rocketmq_group_commit_records_count{cluster="C\\1",broker="broker-\"a\"",shard="0"} 10
# HELP rocketmq_group_commit_max_records Largest group-commit batch since start, per shard.
# TYPE rocketmq_group_commit_max_records gauge
rocketmq_group_commit_max_records{cluster="C\\1",broker="broker-\"a\"",shard="0"} 12
# HELP rocketmq_put_latency_seconds Send request time from decode to answer, per receiving shard.
# TYPE rocketmq_put_latency_seconds histogram
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.00005"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.0001"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.00025"} 2
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.0005"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.001"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.0025"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.005"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.01"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.025"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.05"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.1"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.25"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="0.5"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="1"} 5
rocketmq_put_latency_seconds_bucket{cluster="C\\1",broker="broker-\"a\"",shard="0",le="+Inf"} 6
rocketmq_put_latency_seconds_sum{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0.001234
rocketmq_put_latency_seconds_count{cluster="C\\1",broker="broker-\"a\"",shard="0"} 6
# HELP rocketmq_pull_parked Long-polling pulls parked waiting for messages, per shard.
# TYPE rocketmq_pull_parked gauge
rocketmq_pull_parked{cluster="C\\1",broker="broker-\"a\"",shard="0"} 3
# HELP rocketmq_connections Open client connections, per shard.
# TYPE rocketmq_connections gauge
rocketmq_connections{cluster="C\\1",broker="broker-\"a\"",shard="0"} 4
# HELP rocketmq_connections_accepted_total Client connections accepted, per shard.
# TYPE rocketmq_connections_accepted_total counter
rocketmq_connections_accepted_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 40
# HELP rocketmq_consumer_backlog_messages Messages not yet consumed (max offset - committed offset, summed over queues).
# TYPE rocketmq_consumer_backlog_messages gauge
rocketmq_consumer_backlog_messages{cluster="C\\1",broker="broker-\"a\"",topic="T\"x",group="G\\y\nz"} 7
rocketmq_consumer_backlog_messages{cluster="C\\1",broker="broker-\"a\"",topic="U",group="G"} -2
# HELP rocketmq_ha_slave_connected 1 when this slave's shard is connected to its master's HA stream.
# TYPE rocketmq_ha_slave_connected gauge
rocketmq_ha_slave_connected{cluster="C\\1",broker="broker-\"a\"",shard="0"} 1
# HELP rocketmq_store_commitlog_bytes CommitLog bytes held (max - min physical offset), per shard.
# TYPE rocketmq_store_commitlog_bytes gauge
rocketmq_store_commitlog_bytes{cluster="C\\1",broker="broker-\"a\"",shard="0"} 8192
# HELP rocketmq_store_read_only 1 while the shard's store refuses writes (failed disk write or sync, full disk; the reason is in the log and in GET_BROKER_RUNTIME_INFO storeReadOnlyReason).
# TYPE rocketmq_store_read_only gauge
rocketmq_store_read_only{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0
# HELP rocketmq_retention_deleted_segments_total CommitLog segments deleted by retention, per shard and rule: expired (fileReservedTime, in a deleteWhen hour), expired_disk_pressure (expired, disk above diskMaxUsedSpaceRatio), forced (not expired, disk above diskSpaceCleanForciblyRatio).
# TYPE rocketmq_retention_deleted_segments_total counter
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="0",rule="expired"} 3
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="0",rule="expired_disk_pressure"} 0
rocketmq_retention_deleted_segments_total{cluster="C\\1",broker="broker-\"a\"",shard="0",rule="forced"} 0
# HELP rocketmq_retention_unconsumed_messages_total Messages retention deleted before a consumer group with a committed offset on their queue consumed them, per shard (each group counted; the log names the groups).
# TYPE rocketmq_retention_unconsumed_messages_total counter
rocketmq_retention_unconsumed_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0
# HELP rocketmq_store_tail_cut_messages_total Messages dropped from consume queues by tail cuts (a returning master's writes of an epoch the new master does not have), per shard; the log names the queues and the groups that had read them.
# TYPE rocketmq_store_tail_cut_messages_total counter
rocketmq_store_tail_cut_messages_total{cluster="C\\1",broker="broker-\"a\"",shard="0"} 0
# HELP rocketmq_store_queues Consume queues, per shard.
# TYPE rocketmq_store_queues gauge
rocketmq_store_queues{cluster="C\\1",broker="broker-\"a\"",shard="0"} 8
# HELP rocketmq_store_disk_total_bytes Size of the filesystem holding storePathRootDir.
# TYPE rocketmq_store_disk_total_bytes gauge
rocketmq_store_disk_total_bytes{cluster="C\\1",broker="broker-\"a\""} 0
# HELP rocketmq_store_disk_free_bytes Free bytes (for unprivileged users) on that filesystem.
# TYPE rocketmq_store_disk_free_bytes gauge
rocketmq_store_disk_free_bytes{cluster="C\\1",broker="broker-\"a\""} 0
# HELP rocketmq_store_disk_used_ratio Used fraction of that filesystem (compare with diskMaxUsedSpaceRatio).
# TYPE rocketmq_store_disk_used_ratio gauge
rocketmq_store_disk_used_ratio{cluster="C\\1",broker="broker-\"a\""} 0
# HELP rocketmq_broker_cross_core_requests_total Requests a shard sent to another shard, per kind (the named requests of shard/requests.rs).
# TYPE rocketmq_broker_cross_core_requests_total counter
"#;
}
