//! GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25), as `mqadmin getBrokerConfig` and
//! `updateBrokerConfig` send them: the config as a Java properties text, and changes in the same
//! form. An update is checked whole (unknown keys, bad values and keys that would make the next start
//! fail are refused), persisted to the overlay file beside the store (`config::overlay`) for the next
//! start, and sent to every shard (`config::live`): the live keys are in force at once, the others
//! pending a restart. The answer's remark says which is which; GET_BROKER_CONFIG answers the values
//! in force and names the pending ones in its `pendingRestart` field (a properties text).

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::config::{self, live, overlay, BrokerConfig, ConfigIssue};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// Keys an update may not change: the store location (the overlay lives there), and the shard
/// count and routing mode (recorded with the store; another value would be refused at start).
const REFUSED_KEYS: &[&str] = &["storePathRootDir", "shardCount", "shardRouting"];

/// The response field naming keys updated but not in force until a restart.
pub const PENDING_FIELD: &str = "pendingRestart";

/// GET_BROKER_CONFIG: every key with the value in force; keys pending a restart in `pendingRestart`.
pub fn get(shard: &Shard) -> RemotingCommand {
    let mut text = shard.effective_cfg().to_properties_text();
    // Not a setting here (filter servers do not exist), but Apache 4.9.8's `exportConfigs` fails on
    // a broker config without it.
    text.push_str("filterServerNums=0\n");
    let mut resp = ok().with_body(text);
    let pending = live::pending(&shard.cfg);
    if !pending.is_empty() {
        let text: String = pending
            .iter()
            .map(|(key, value)| format!("{key}={value}\n"))
            .collect();
        resp.ext_fields.insert(PENDING_FIELD, &text);
    }
    resp
}

/// Checks `changes` against the config in force; answers the updated config.
pub fn updated_config(
    current: &BrokerConfig,
    changes: &[(String, String)],
) -> Result<BrokerConfig, String> {
    if changes.is_empty() {
        return Err("no key to update".to_owned());
    }
    let mut cfg = current.clone();
    for (key, value) in changes {
        if REFUSED_KEYS.contains(&key.as_str()) {
            return Err(format!("`{key}` cannot be changed at run time"));
        }
        // Who may do what is not changed by a request that passes through it.
        if crate::config::auth::AuthConfig::default()
            .set(key, value)
            .is_some()
        {
            return Err(format!(
                "`{key}` (ACL 2.0) cannot be changed at run time: change it in the broker's \
                 config file and restart"
            ));
        }
        // Nor is TLS: a request (perhaps itself in plaintext) must not turn it off for the next start.
        if crate::config::tls::TlsConfig::default()
            .set(key, value)
            .is_some()
        {
            return Err(format!(
                "`{key}` (TLS) cannot be changed at run time: change it in the broker's config \
                 file and restart"
            ));
        }
        match cfg.set(key, value) {
            Ok(None) => {}
            Ok(Some(ConfigIssue::Unknown(k))) => return Err(format!("unknown config key `{k}`")),
            Ok(Some(ConfigIssue::NotSupported(k))) => {
                return Err(format!("`{k}` is a RocketMQ key this broker does not use"))
            }
            Ok(Some(ConfigIssue::Moot { key, reason })) => {
                return Err(format!("`{key}` is not used by this broker: {reason}"))
            }
            // Not an answer of `set`; only loading a file with an override reports it.
            Ok(Some(ConfigIssue::Overridden { .. })) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    // The store must open with the result at the next start.
    crate::startup::store_config::store_config(&cfg, 0)
        .map_err(|e| format!("the broker would not start with this config: {e}"))?;
    Ok(cfg)
}

/// What an update does to each key: in force at once, already the value in force, or pending a
/// restart. The UPDATE answer's remark.
pub fn outcome_remark(in_force: &BrokerConfig, changes: &[(String, String)]) -> String {
    let mut applied = Vec::new();
    let mut pending = Vec::new();
    let in_force = in_force.to_pairs();
    for (key, value) in changes {
        let now = in_force.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        // A live key is in force now; so is one set to the value already in force.
        if live::LIVE_KEYS.contains(&key.as_str()) || now.is_some_and(|v| v == value.trim()) {
            applied.push(key.as_str());
        } else {
            let now = now.map_or(String::new(), |v| format!(" (in force: {v})"));
            pending.push(format!("{key}{now}"));
        }
    }
    let mut parts = Vec::new();
    if !applied.is_empty() {
        parts.push(format!("applied: {}", applied.join(", ")));
    }
    if !pending.is_empty() {
        parts.push(format!(
            "takes effect after restart: {}",
            pending.join(", ")
        ));
    }
    parts.join("; ")
}

/// UPDATE_BROKER_CONFIG, on the control shard.
pub async fn update(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    if shard.control.is_none() {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    }
    let Ok(text) = std::str::from_utf8(&req.body) else {
        return error(
            rc::SYSTEM_ERROR,
            "string2Properties error: body is not UTF-8",
        );
    };
    let changes = config::parse_properties(text);
    let in_force = live::effective(&shard.cfg);
    // Built on the last update, so a key pending a restart stays pending.
    let base = live::configured(&shard.cfg);
    let updated = match updated_config(&base, &changes) {
        Ok(cfg) => cfg,
        Err(why) => return error(rc::SYSTEM_ERROR, format!("update broker config: {why}")),
    };
    let root = shard.cfg.store_path_root_dir.clone();
    let existing = match overlay::read_overlay(&root) {
        Ok(pairs) => pairs,
        Err(e) => return error(rc::SYSTEM_ERROR, format!("cannot read the overlay: {e}")),
    };
    let text = overlay::merged_overlay(&existing, &changes);
    let path = overlay::overlay_path(&root);
    if let Err(e) =
        crate::state::persist::write_atomic_off_thread(path.clone(), text.into_bytes()).await
    {
        return error(
            rc::SYSTEM_ERROR,
            format!("cannot write {}: {e}", path.display()),
        );
    }
    // Every shard takes the updated config: the live keys are in force there at once, and any shard
    // can answer GET_BROKER_CONFIG with what is pending.
    let new_perm = updated.broker_permission;
    let cfg = Rc::new(updated);
    let jobs = shard.every_shard().map(|s| {
        let cfg = BrokerConfig::clone(&cfg);
        s.apply_config(cfg)
    });
    for (i, result) in join_all(jobs).await.into_iter().enumerate() {
        if let Err(e) = result {
            return error(
                rc::SYSTEM_ERROR,
                format!(
                    "written to {}, but shard {i} did not take the change: {e}",
                    path.display()
                ),
            );
        }
    }
    if in_force.broker_permission != new_perm {
        // The name servers learn the new perm from a registration with a new data version.
        shard
            .topics
            .borrow_mut()
            .data_version
            .next(crate::state::topics::now_ms());
        crate::role::control::register_soon(shard);
    }
    let mut remark = outcome_remark(&in_force, &changes);
    if shard.cfg.shards_are_brokers(shard.shards) {
        // The config is the process's, whichever shard-broker's address the request came to.
        let name = &shard.cfg.broker_name;
        let last = shard.shards.saturating_sub(1);
        remark.push_str(&format!(
            "; on every shard-broker of {name} ({name}-0 .. {name}-{last})"
        ));
    }
    tracing::info!(
        "broker config updated ({remark}); written to {}",
        path.display()
    );
    let mut resp = ok();
    resp.remark = Some(remark);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn updates_are_checked_whole() {
        let current = BrokerConfig::default();
        let cfg = updated_config(&current, &pairs(&[("brokerPermission", "4")])).unwrap();
        assert_eq!(cfg.broker_permission, 4);
        assert!(updated_config(&current, &[]).is_err());
        let err = updated_config(&current, &pairs(&[("brokerPermission", "x")])).unwrap_err();
        assert!(err.contains("brokerPermission"), "{err}");
        let err = updated_config(&current, &pairs(&[("noSuchKey", "1")])).unwrap_err();
        assert!(err.contains("noSuchKey"), "{err}");
        assert!(updated_config(&current, &pairs(&[("shardCount", "3")])).is_err());
        assert!(updated_config(&current, &pairs(&[("storePathRootDir", "/x")])).is_err());
        let tls = updated_config(&current, &pairs(&[("tls.server.mode", "disabled")]));
        assert!(tls.is_err_and(|e| e.contains("TLS")));
        assert!(updated_config(&current, &pairs(&[("useTLS", "false")])).is_err());
        assert!(updated_config(&current, &pairs(&[("storeCheckpoint", "/x")])).is_err());
        let err =
            updated_config(&current, &pairs(&[("authenticationEnabled", "false")])).unwrap_err();
        assert!(err.contains("restart"), "{err}");
        assert!(updated_config(&current, &pairs(&[("shardRouting", "forward")])).is_err());
        // A value the store could not open with at the next start.
        let err =
            updated_config(&current, &pairs(&[("maxMessageSize", "2000000000")])).unwrap_err();
        assert!(err.contains("would not start"), "{err}");
    }

    #[test]
    fn the_remark_says_what_is_applied_and_what_waits() {
        let current = BrokerConfig::default();
        let remark = outcome_remark(
            &current,
            &pairs(&[
                ("flushIntervalCommitLog", "250"),
                ("maxMessageSize", "1024"),
                ("defaultTopicQueueNums", "3"),
                ("traceOn", "true"),
            ]),
        );
        assert_eq!(
            remark,
            "applied: flushIntervalCommitLog, maxMessageSize, traceOn; takes effect after \
             restart: defaultTopicQueueNums (in force: 4)"
        );
    }
}
