//! KV config requests, as `mqadmin updateKvConfig` / `deleteKvConfig` and clients send them:
//! PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102), GET_KVLIST_BY_NAMESPACE (219).
//! A missing entry is QUERY_NOT_FOUND with Apache's remark (clients ask for ORDER_TOPIC_CONFIG).

use protocol::body::KVTable;
use protocol::header::{
    CommandHeader, GetKvConfigResponseHeader, GetKvListByNamespaceRequestHeader,
    KvConfigKeyRequestHeader, PutKvConfigRequestHeader,
};
use protocol::{response_code, RemotingCommand};

use crate::name_server::NameServer;
use crate::response;

fn not_found(request: &RemotingCommand, namespace: &str, key: &str) -> RemotingCommand {
    response::error(
        request,
        response_code::QUERY_NOT_FOUND,
        format!("No config item, Namespace: {namespace} Key: {key}"),
    )
}

/// PUT_KV_CONFIG (100): sets an entry and writes the KV file before answering.
pub fn put(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let h = match PutKvConfigRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(h) => h,
        Err(e) => return response::bad_input(request, format!("put KV config header: {e}")),
    };
    if h.namespace.is_empty() || h.key.is_empty() {
        return response::bad_input(request, "namespace and key must not be empty");
    }
    match ns.kv.borrow_mut().put(&h.namespace, &h.key, &h.value) {
        Ok(()) => {
            tracing::info!("KV config put {} {} = {}", h.namespace, h.key, h.value);
            response::success(request)
        }
        Err(why) => response::error(request, response_code::SYSTEM_ERROR, why),
    }
}

/// GET_KV_CONFIG (101): the value in the `value` header field.
pub fn get(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let h = match KvConfigKeyRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(h) => h,
        Err(e) => return response::bad_input(request, format!("get KV config header: {e}")),
    };
    match ns.kv.borrow().get(&h.namespace, &h.key) {
        Some(value) => response::success(request).with_ext_fields(
            GetKvConfigResponseHeader {
                value: Some(value.to_owned()),
            }
            .to_ext_fields(),
        ),
        None => not_found(request, &h.namespace, &h.key),
    }
}

/// DELETE_KV_CONFIG (102).
pub fn delete(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let h = match KvConfigKeyRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(h) => h,
        Err(e) => return response::bad_input(request, format!("delete KV config header: {e}")),
    };
    match ns.kv.borrow_mut().delete(&h.namespace, &h.key) {
        Ok(()) => {
            tracing::info!("KV config delete {} {}", h.namespace, h.key);
            response::success(request)
        }
        Err(why) => response::error(request, response_code::SYSTEM_ERROR, why),
    }
}

/// GET_KVLIST_BY_NAMESPACE (219): every entry of a namespace as a KVTable body.
pub fn list_namespace(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let h = match GetKvListByNamespaceRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(h) => h,
        Err(e) => return response::bad_input(request, format!("KV list header: {e}")),
    };
    let table = ns.kv.borrow().namespace(&h.namespace);
    if table.is_empty() {
        return not_found(request, &h.namespace, "");
    }
    response::json(request, &KVTable { table })
}
