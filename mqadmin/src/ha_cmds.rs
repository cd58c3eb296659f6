//! HA commands: `haStatus` (GET_BROKER_HA_STATUS: a master's slaves, or a slave's master),
//! `getBrokerEpoch` (GET_BROKER_EPOCH_CACHE: the epochs of each replica's log, controller mode) and
//! `resetMasterFlushOffset` (RESET_MASTER_FLUSH_OFFSET), with Apache's flags and output lines.
//! Apache's `-i` (repeat every N seconds, forever) is refused: run the command under `watch`.

use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::body::{from_json, EpochEntryCache, HaRuntimeInfo};
use protocol::header::{CommandHeader, ResetMasterFlushOffsetHeader};
use protocol::{request_code, ExtFields};
use serde_json::json;

use crate::admin::Admin;
use crate::shared_args::Namesrv;
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum HaCommand {
    /// Fetch ha runtime status data (a master's slaves, or a slave's master).
    #[command(name = "haStatus")]
    HaStatus(HaStatusArgs),
    /// Fetch broker epoch entries (controller mode).
    #[command(name = "getBrokerEpoch")]
    GetBrokerEpoch(GetBrokerEpochArgs),
    /// Set the master flush offset a slave reports.
    #[command(name = "resetMasterFlushOffset")]
    ResetMasterFlushOffset(ResetMasterFlushOffsetArgs),
}

#[derive(Debug, Args)]
pub struct HaStatusArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// which cluster (every master of it)
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
    /// which broker to fetch
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// the interval(second) of get info: not supported (run under `watch`)
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<String>,
}

#[derive(Debug, Args)]
pub struct GetBrokerEpochArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// which cluster (every replica of it)
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
    /// which broker to fetch (every replica of that broker name)
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: Option<String>,
    /// the interval(second) of get info: not supported (run under `watch`)
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResetMasterFlushOffsetArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// which broker to reset
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: String,
    /// the offset to reset at
    #[arg(short = 'o', long = "offset")]
    pub offset: i64,
}

fn no_interval(interval: &Option<String>) -> Result<(), ClientError> {
    match interval {
        Some(_) => Err(ClientError::Invalid(
            "-i (repeat forever) is not supported; run the command under watch(1) instead".into(),
        )),
        None => Ok(()),
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Apache's `UtilAll.timeMillisToHumanString2` (`yyyy-MM-dd HH:mm:ss,SSS`), in UTC.
pub fn human_time(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02},{:03}",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// Apache's `haStatus` lines for one broker.
pub fn ha_status_lines(addr: &str, info: &HaRuntimeInfo) -> Vec<String> {
    let mut out = Vec::new();
    if info.master {
        out.push(String::new());
        out.push(format!("#MasterAddr\t{addr}"));
        out.push(format!(
            "#MasterCommitLogMaxOffset\t{}",
            info.master_commit_log_max_offset
        ));
        out.push(format!("#SlaveNum\t{}", info.ha_connection_info.len()));
        out.push(format!("#InSyncSlaveNum\t{}", info.in_sync_slave_nums));
        out.push(format!(
            "{:<32}  {:<16} {:>16} {:>16} {:>16} {:>16}",
            "#SlaveAddr",
            "#SlaveAckOffset",
            "#Diff",
            "#TransferSpeed(KB/s)",
            "#Status",
            "#TransferFromWhere"
        ));
        for c in &info.ha_connection_info {
            out.push(format!(
                "{:<32}  {:<16} {:>16} {:>16.2} {:>16} {:>16}",
                c.addr.as_deref().unwrap_or("null"),
                c.slave_ack_offset,
                c.diff,
                c.transferred_byte_in_second as f64 / 1024.0,
                if c.in_sync { "OK" } else { "Fall Behind" },
                c.transfer_from_where
            ));
        }
    } else {
        let c = &info.ha_client_runtime_info;
        out.push(String::new());
        out.push(format!(
            "#MasterAddr\t{}",
            c.master_addr.as_deref().unwrap_or("null")
        ));
        out.push(format!("#CommitLogMaxOffset\t{}", c.max_offset));
        out.push(format!(
            "#TransferSpeed(KB/s)\t{:.2}",
            c.transferred_byte_in_second as f64 / 1024.0
        ));
        out.push(format!(
            "#LastReadTime\t{}",
            human_time(c.last_read_timestamp)
        ));
        out.push(format!(
            "#LastWriteTime\t{}",
            human_time(c.last_write_timestamp)
        ));
        out.push(format!("#MasterFlushOffset\t{}", c.master_flush_offset));
    }
    out
}

/// Apache's `getBrokerEpoch` lines for one replica (the last epoch ends at the log's end).
pub fn epoch_lines(addr: &str, cache: &EpochEntryCache) -> Vec<String> {
    let mut text = format!(
        "\n#clusterName\t{}\n#brokerName\t{}\n#brokerAddr\t{addr}\n#brokerId\t{}",
        cache.cluster_name, cache.broker_name, cache.broker_id
    );
    let n = cache.epoch_list.len();
    for (i, e) in cache.epoch_list.iter().enumerate() {
        let mut e = *e;
        if i + 1 == n {
            e.end_offset = cache.max_offset;
        }
        text.push_str(&format!("\n#Epoch: {}", e.java_text()));
    }
    text.lines().map(str::to_owned).collect()
}

async fn ha_status(admin: &Admin, addrs: Vec<String>) -> Result<Report, ClientError> {
    let mut lines = Vec::new();
    let mut all = Vec::new();
    for addr in addrs {
        let resp = admin
            .call(
                &addr,
                request(request_code::GET_BROKER_HA_STATUS, ExtFields::new()),
            )
            .await?;
        let info: HaRuntimeInfo = from_json(&resp.body)?;
        lines.extend(ha_status_lines(&addr, &info));
        all.push(json!({"brokerAddr": addr, "haRuntimeInfo": info}));
    }
    Ok(Report::lines(lines, json!(all)))
}

async fn broker_epochs(admin: &Admin, addrs: Vec<String>) -> Result<Report, ClientError> {
    let mut lines = Vec::new();
    let mut all = Vec::new();
    for addr in addrs {
        let resp = admin
            .call(
                &addr,
                request(request_code::GET_BROKER_EPOCH_CACHE, ExtFields::new()),
            )
            .await?;
        let cache: EpochEntryCache = from_json(&resp.body)?;
        lines.extend(epoch_lines(&addr, &cache));
        all.push(json!({"brokerAddr": addr, "epochEntryCache": cache}));
    }
    Ok(Report::lines(lines, json!(all)))
}

pub async fn run(command: HaCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        HaCommand::HaStatus(args) => {
            no_interval(&args.interval)?;
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            let addrs = match (args.broker, args.cluster) {
                (Some(b), _) => vec![b.trim().to_owned()],
                (None, Some(c)) => admin.master_addrs(Some(c.trim())).await?,
                (None, None) => {
                    return Err(ClientError::Invalid(
                        "give -b brokerAddr or -c clusterName".into(),
                    ))
                }
            };
            ha_status(&admin, addrs).await
        }
        HaCommand::GetBrokerEpoch(args) => {
            no_interval(&args.interval)?;
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            let addrs: Vec<String> = match (args.broker_name, args.cluster) {
                (Some(name), _) => {
                    let name = name.trim().to_owned();
                    let info = admin.cluster_info().await?;
                    let broker = info.broker_addr_table.get(&name).ok_or_else(|| {
                        ClientError::Invalid(format!("broker {name} is not registered"))
                    })?;
                    broker.broker_addrs.values().cloned().collect()
                }
                (None, Some(c)) => admin
                    .cluster_brokers(c.trim())
                    .await?
                    .into_iter()
                    .map(|(_, _, a)| a)
                    .collect(),
                (None, None) => {
                    return Err(ClientError::Invalid(
                        "give -b brokerName or -c clusterName".into(),
                    ))
                }
            };
            broker_epochs(&admin, addrs).await
        }
        HaCommand::ResetMasterFlushOffset(args) => {
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            let header = ResetMasterFlushOffsetHeader {
                master_flush_offset: args.offset,
            };
            admin
                .call(
                    args.broker.trim(),
                    request(
                        request_code::RESET_MASTER_FLUSH_OFFSET,
                        header.to_ext_fields(),
                    ),
                )
                .await?;
            Ok(Report::lines(
                vec![format!(
                    "reset master flush offset to {} success",
                    args.offset
                )],
                json!({"brokerAddr": args.broker.trim(), "masterFlushOffset": args.offset}),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::{EpochEntryJson, HaConnectionRuntimeInfo};

    #[test]
    fn human_time_is_apaches_format() {
        assert_eq!(human_time(0), "1970-01-01 00:00:00,000");
        assert_eq!(human_time(1_700_000_000_123), "2023-11-14 22:13:20,123");
    }

    #[test]
    fn master_and_slave_lines_match_apaches() {
        let mut info = HaRuntimeInfo {
            master: true,
            master_commit_log_max_offset: 1000,
            in_sync_slave_nums: 1,
            ..Default::default()
        };
        info.ha_connection_info.push(HaConnectionRuntimeInfo {
            addr: Some("127.0.0.1:5000".into()),
            slave_ack_offset: 900,
            diff: 100,
            in_sync: true,
            transferred_byte_in_second: 2048,
            transfer_from_where: 0,
        });
        let lines = ha_status_lines("127.0.0.1:10911", &info);
        assert_eq!(lines[1], "#MasterAddr\t127.0.0.1:10911");
        assert_eq!(lines[3], "#SlaveNum\t1");
        assert_eq!(
            lines[6],
            format!(
                "{:<32}  {:<16} {:>16} {:>16} {:>16} {:>16}",
                "127.0.0.1:5000", 900, 100, "2.00", "OK", 0
            )
        );
        let slave = HaRuntimeInfo::default();
        let lines = ha_status_lines("x", &slave);
        assert_eq!(lines[1], "#MasterAddr\tnull");
        assert_eq!(lines[3], "#TransferSpeed(KB/s)\t0.00");
    }

    #[test]
    fn the_last_epoch_ends_at_the_log_end() {
        let cache = EpochEntryCache {
            cluster_name: "C".into(),
            broker_name: "b".into(),
            broker_id: 2,
            epoch_list: vec![EpochEntryJson {
                epoch: 1,
                start_offset: 0,
                end_offset: i64::MAX,
            }],
            max_offset: 77,
        };
        assert_eq!(
            epoch_lines("a:1", &cache),
            [
                "",
                "#clusterName\tC",
                "#brokerName\tb",
                "#brokerAddr\ta:1",
                "#brokerId\t2",
                "#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=77}"
            ]
        );
    }
}
