//! GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318), as `mqadmin getNamesrvConfig` and
//! `updateNamesrvConfig` send them: Java properties text (`key=value` lines) both ways.
//!
//! Only `orderMessageEnable` changes at runtime; it is written to `configStorePath` and read from
//! there at the next start. Every other key needs a restart with its command-line flag, and an
//! update naming one is refused (Apache would store it and ignore it until a restart).

use std::collections::BTreeMap;
use std::path::Path;

use protocol::{response_code, RemotingCommand};

use crate::kv_config::write_atomically;
use crate::name_server::NameServer;
use crate::response;

const ORDER_MESSAGE_ENABLE: &str = "orderMessageEnable";

/// Settings an earlier UPDATE_NAMESRV_CONFIG stored.
#[derive(Debug, Default)]
pub struct StoredSettings {
    pub order_message_enable: Option<bool>,
}

/// The properties as a map (a later duplicate wins).
fn parse_properties(text: &str) -> BTreeMap<String, String> {
    protocol::properties_text::parse(text).into_iter().collect()
}

fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{key} must be true or false, not {value:?}")),
    }
}

/// Reads `configStorePath` (missing = nothing stored).
pub fn load_stored(path: &Path) -> Result<StoredSettings, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoredSettings::default()),
        Err(e) => return Err(format!("name server config {}: {e}", path.display())),
    };
    let props = parse_properties(&text);
    let order_message_enable = props
        .get(ORDER_MESSAGE_ENABLE)
        .map(|v| parse_bool(ORDER_MESSAGE_ENABLE, v))
        .transpose()
        .map_err(|e| format!("name server config {}: {e}", path.display()))?;
    Ok(StoredSettings {
        order_message_enable,
    })
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
        let stored = format!("{ORDER_MESSAGE_ENABLE}={enable}\n");
        if let Err(e) = write_atomically(&ns.config().config_store_path, stored.as_bytes()) {
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
