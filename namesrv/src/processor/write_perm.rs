//! WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327), as `mqadmin wipeWritePerm`
//! and `addWritePerm` send them: change the perm of a broker name's queue data in every route and
//! answer how many topics changed (`wipeTopicCount` / `addTopicCount`). A name no broker registered
//! under that names a broker process of several shard-brokers (`broker-a` for `broker-a-0` ..
//! `broker-a-N`) acts on every one of them, and the count is their sum; the remark names them.

use protocol::header::{
    AddWritePermOfBrokerResponseHeader, CommandHeader, WipeWritePermOfBrokerResponseHeader,
    WritePermOfBrokerRequestHeader,
};
use protocol::RemotingCommand;

use crate::name_server::NameServer;
use crate::response;

/// The topic routes changed, and the broker names changed when they are not the name asked.
fn change(
    ns: &NameServer,
    request: &RemotingCommand,
    wipe: bool,
) -> Result<(i32, Option<String>), String> {
    let header = WritePermOfBrokerRequestHeader::from_ext_fields(&request.ext_fields)
        .map_err(|e| format!("write perm header: {e}"))?;
    let name = header.broker_name.trim();
    let mut table = ns.table.borrow_mut();
    let targets = table.write_perm_targets(name)?;
    let count = targets.iter().fold(0i32, |sum, broker| {
        sum.saturating_add(table.change_write_perm(broker, wipe))
    });
    let verb = if wipe { "wipe" } else { "add" };
    let exact = targets.len() == 1 && targets.iter().all(|t| t == name);
    let shards = (!exact && !targets.is_empty()).then(|| targets.join(","));
    match &shards {
        Some(list) => tracing::info!(
            "{verb} write perm of broker {name} (shard-brokers {list}): {count} topic routes"
        ),
        None => tracing::info!("{verb} write perm of broker {name}: {count} topics"),
    }
    Ok((count, shards))
}

/// The answer: the count header, and for a process of shard-brokers a remark naming them.
fn answer(
    request: &RemotingCommand,
    outcome: Result<(i32, Option<String>), String>,
    header: impl FnOnce(i32) -> protocol::ExtFields,
) -> RemotingCommand {
    match outcome {
        Ok((count, shards)) => {
            let mut resp = response::success(request).with_ext_fields(header(count));
            if let Some(list) = shards {
                resp.remark = Some(format!("shard-brokers: {list}"));
            }
            resp
        }
        Err(why) => {
            tracing::warn!("write perm of a broker refused: {why}");
            response::error(request, protocol::response_code::SYSTEM_ERROR, why)
        }
    }
}

pub fn wipe(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    answer(request, change(ns, request, true), |count| {
        WipeWritePermOfBrokerResponseHeader {
            wipe_topic_count: count,
        }
        .to_ext_fields()
    })
}

pub fn add(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    answer(request, change(ns, request, false), |count| {
        AddWritePermOfBrokerResponseHeader {
            add_topic_count: count,
        }
        .to_ext_fields()
    })
}
