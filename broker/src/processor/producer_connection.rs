//! GET_PRODUCER_CONNECTION_LIST (204, on shard 0): the clients of a producer group as their
//! heartbeats registered them (`mqadmin producerConnection`).

use protocol::body::ProducerConnection;
use protocol::header::{CommandHeader, GetProducerConnectionListRequestHeader};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::shard::Shard;
use crate::state::clients::ConsumerClient;

pub fn handle(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let header = match GetProducerConnectionListRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let clients = ctl
        .clients
        .borrow()
        .producer_clients(&header.producer_group);
    if clients.is_empty() {
        return error(
            rc::SYSTEM_ERROR,
            format!("the producer group[{}] not exist", header.producer_group),
        );
    }
    let body = ProducerConnection {
        connection_set: clients
            .into_iter()
            .map(ConsumerClient::into_connection)
            .collect(),
    };
    ok().with_body(protocol::body::to_json(&body))
}
