//! GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318), as `mqadmin getNamesrvConfig` and
//! `updateNamesrvConfig` send them: Java properties text (`key=value` lines) both ways.
//!
//! Only `orderMessageEnable` changes at runtime; it is written to `configStorePath` and read from
//! there at the next start. Every other key needs a restart with its command-line flag, and an
//! update naming one is refused (Apache would store it and ignore it until a restart).

use std::collections::BTreeMap;

use protocol::{response_code, RemotingCommand};

use crate::name_server::{parse_bool, NameServer, StoredSettings, ORDER_MESSAGE_ENABLE};
use crate::response;

/// The properties as a map (a later duplicate wins).
fn parse_properties(text: &str) -> BTreeMap<String, String> {
    protocol::properties_text::parse(text).into_iter().collect()
}

/// The settings this name server runs with, by Apache's key names where it has them.
fn current(ns: &NameServer) -> BTreeMap<&'static str, String> {
    let c = ns.config();
    BTreeMap::from([
        ("listenPort", c.listen.port().to_string()),
        ("listenAddress", c.listen.ip().to_string()),
        ("kvConfigPath", c.kv_config_path.display().to_string()),
        ("configStorePath", c.config_store_path.display().to_string()),
        (
            ORDER_MESSAGE_ENABLE,
            ns.order_message_enable.get().to_string(),
        ),
        (
            "brokerExpireMillis",
            c.broker_expire.as_millis().to_string(),
        ),
        (
            "scanNotActiveBrokerInterval",
            c.scan_interval.as_millis().to_string(),
        ),
    ])
}

/// GET_NAMESRV_CONFIG (319): every setting as properties text in the body.
pub fn get(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let text: String = current(ns)
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    response::success(request).with_body(bytes::Bytes::from(text))
}

/// UPDATE_NAMESRV_CONFIG (318): applies the runtime keys of the properties body and stores them.
pub fn update(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let Ok(text) = std::str::from_utf8(&request.body) else {
        return response::bad_input(request, "the properties body is not UTF-8");
    };
    let props = parse_properties(text);
    if props.is_empty() {
        return response::bad_input(request, "no key=value in the body");
    }
    let known = current(ns);
    let mut order_message_enable = None;
    for (key, value) in &props {
        if key == ORDER_MESSAGE_ENABLE {
            match parse_bool(key, value) {
                Ok(b) => order_message_enable = Some(b),
                Err(why) => return response::bad_input(request, why),
            }
        } else if known.contains_key(key.as_str()) {
            return response::error(
                request,
                response_code::SYSTEM_ERROR,
                format!("{key} cannot change at runtime: restart the name server with it set"),
            );
        } else {
            return response::error(
                request,
                response_code::SYSTEM_ERROR,
                format!("unknown name server setting {key}"),
            );
        }
    }
    if let Some(enable) = order_message_enable {
        let stored = StoredSettings {
            order_message_enable: Some(enable),
        };
        if let Err(e) = stored.store(&ns.config().config_store_path) {
            return response::error(
                request,
                response_code::SYSTEM_ERROR,
                format!(
                    "cannot write {}: {e}",
                    ns.config().config_store_path.display()
                ),
            );
        }
        ns.order_message_enable.set(enable);
        tracing::info!("name server config updated: {ORDER_MESSAGE_ENABLE}={enable}");
    }
    response::success(request)
}
