//! WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327), as `mqadmin wipeWritePerm`
//! and `addWritePerm` send them: change the perm of a broker name's queue data in every route and
//! answer how many topics changed (`wipeTopicCount` / `addTopicCount`).

use protocol::header::{
    AddWritePermOfBrokerResponseHeader, CommandHeader, WipeWritePermOfBrokerResponseHeader,
    WritePermOfBrokerRequestHeader,
};
use protocol::RemotingCommand;

use crate::name_server::NameServer;
use crate::response;

fn change(ns: &NameServer, request: &RemotingCommand, wipe: bool) -> Result<i32, String> {
    let header = WritePermOfBrokerRequestHeader::from_ext_fields(&request.ext_fields)
        .map_err(|e| format!("write perm header: {e}"))?;
    let count = ns
        .table
        .borrow_mut()
        .change_write_perm(&header.broker_name, wipe);
    tracing::info!(
        "{} write perm of broker {}: {count} topics",
        if wipe { "wipe" } else { "add" },
        header.broker_name
    );
    Ok(count)
}

pub fn wipe(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    match change(ns, request, true) {
        Ok(count) => response::success(request).with_ext_fields(
            WipeWritePermOfBrokerResponseHeader {
                wipe_topic_count: count,
            }
            .to_ext_fields(),
        ),
        Err(why) => response::bad_input(request, why),
    }
}

pub fn add(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    match change(ns, request, false) {
        Ok(count) => response::success(request).with_ext_fields(
            AddWritePermOfBrokerResponseHeader {
                add_topic_count: count,
            }
            .to_ext_fields(),
        ),
        Err(why) => response::bad_input(request, why),
    }
}
