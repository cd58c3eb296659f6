//! Broker requests: REGISTER_BROKER, UNREGISTER_BROKER and QUERY_DATA_VERSION.

use protocol::body::{self, DataVersion, RegisterBrokerBody};
use protocol::header::{
    CommandHeader, QueryDataVersionRequestHeader, QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnregisterBrokerRequestHeader,
};
use protocol::RemotingCommand;

use crate::name_server::NameServer;
use crate::response;
use crate::route_table::Registration;

/// RocketMQ's `UtilAll.crc32`: CRC32 masked to 31 bits.
fn body_crc32(body: &[u8]) -> i32 {
    // The mask keeps the value within i32's positive range, so the conversion cannot fail.
    i32::try_from(crc32fast::hash(body) & 0x7FFF_FFFF).unwrap_or(0)
}

/// REGISTER_BROKER (103).
pub fn register(ns: &NameServer, request: &RemotingCommand, connection_id: u64) -> RemotingCommand {
    let header = match RegisterBrokerRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(header) => header,
        Err(e) => return response::bad_input(request, format!("register broker header: {e}")),
    };
    if let Some(expected) = header.body_crc32.filter(|crc| *crc != 0) {
        let actual = body_crc32(&request.body);
        if actual != expected {
            return response::bad_input(
                request,
                format!("register broker body crc32 {actual} does not match bodyCrc32 {expected}"),
            );
        }
    }
    // JSON, or RocketMQ's binary layout in a zlib stream when `compressed=true`; no body is a
    // registration without topics (as in Java).
    let compressed = header.compressed == Some(true);
    let body = match RegisterBrokerBody::decode(&request.body, compressed) {
        Ok(body) => body,
        Err(e) => return response::bad_input(request, format!("register broker body: {e}")),
    };
    let expire_after_ms = header
        .heartbeat_timeout_millis
        .and_then(|ms| u64::try_from(ms).ok())
        .filter(|ms| *ms > 0);
    let registration = Registration {
        cluster_name: &header.cluster_name,
        broker_name: &header.broker_name,
        broker_addr: &header.broker_addr,
        broker_id: header.broker_id,
        ha_server_addr: &header.ha_server_addr,
        topics: &body.topic_config_serialize_wrapper,
        filter_server_list: &body.filter_server_list,
        connection_id: ns.registration_connection(&header.broker_addr, connection_id),
        expire_after_ms,
    };
    let now = ns.now_ms();
    let outcome = ns.table.borrow_mut().register(&registration, now);
    if let Some((holder, held)) = &outcome.conflict {
        // Apache answers SUCCESS with no master address too; the broker learns its role from the
        // controllers and registers again with their epoch.
        tracing::warn!(
            "registration ignored: cluster {} name {} id {} addr {} stateVersion {} conflicts with \
             {holder}, which holds that id at stateVersion {held}",
            header.cluster_name,
            header.broker_name,
            header.broker_id,
            header.broker_addr,
            body.topic_config_serialize_wrapper.data_version.state_version
        );
    } else if outcome.new_broker {
        tracing::info!(
            "broker registered: cluster {} name {} id {} addr {} ha {} ({} topics)",
            header.cluster_name,
            header.broker_name,
            header.broker_id,
            header.broker_addr,
            header.ha_server_addr,
            body.topic_config_serialize_wrapper.topic_config_table.len()
        );
    } else {
        tracing::debug!("broker {} re-registered", header.broker_addr);
    }
    let response_header = RegisterBrokerResponseHeader {
        ha_server_addr: outcome.ha_server_addr,
        master_addr: outcome.master_addr,
    };
    response::success(request).with_ext_fields(response_header.to_ext_fields())
}

/// UNREGISTER_BROKER (104).
pub fn unregister(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let header = match UnregisterBrokerRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(header) => header,
        Err(e) => return response::bad_input(request, format!("unregister broker header: {e}")),
    };
    let was_live = ns.table.borrow_mut().unregister(
        &header.cluster_name,
        &header.broker_name,
        &header.broker_addr,
        header.broker_id,
    );
    tracing::info!(
        "broker unregistered: cluster {} name {} id {} addr {} (was live: {was_live})",
        header.cluster_name,
        header.broker_name,
        header.broker_id,
        header.broker_addr
    );
    response::success(request)
}

/// QUERY_DATA_VERSION (322): tells the broker whether its topic table changed since it last
/// registered; an unchanged broker counts as heard from (Java's rule).
pub fn query_data_version(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let header = match QueryDataVersionRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(header) => header,
        Err(e) => return response::bad_input(request, format!("query data version header: {e}")),
    };
    let version = match body::from_json::<DataVersion>(&request.body) {
        Ok(version) => version,
        Err(e) => return response::bad_input(request, format!("query data version body: {e}")),
    };
    let now = ns.now_ms();
    let (changed, stored) = {
        let mut table = ns.table.borrow_mut();
        let changed = table.data_version_changed(&header.broker_addr, &version);
        if !changed {
            table.touch(&header.broker_addr, now);
        }
        (changed, table.data_version(&header.broker_addr))
    };
    let response_header = QueryDataVersionResponseHeader { changed };
    let mut response = response::success(request).with_ext_fields(response_header.to_ext_fields());
    if let Some(stored) = stored {
        response.set_body(body::to_json(&stored));
    }
    response
}
