//! GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25), as `mqadmin getBrokerConfig` and
//! `updateBrokerConfig` send them: the config as a Java properties text, and changes in the same
//! form. An update is checked whole (unknown keys, bad values and keys that would make the next start
//! fail are refused), applied on every shard where it can be at run time (`config::live`), and
//! persisted to the overlay file beside the store (`config::overlay`) for the next start.

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::config::{self, live, overlay, BrokerConfig, ConfigIssue};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// Keys an update may not change: the store location (the overlay lives there) and the shard
/// count (recorded with the store; another value would be refused at start).
const REFUSED_KEYS: &[&str] = &["storePathRootDir", "shardCount"];

/// GET_BROKER_CONFIG: every key with the value in force.
pub fn get(shard: &Shard) -> RemotingCommand {
    ok().with_body(shard.effective_cfg().to_properties_text())
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
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(cfg)
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
    let current = live::effective(&shard.cfg);
    let updated = match updated_config(&current, &changes) {
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
    let live_changed = changes
        .iter()
        .any(|(k, _)| live::LIVE_KEYS.contains(&k.as_str()));
    if live_changed {
        let cfg = Rc::new(updated);
        let jobs = shard.every_shard().map(|s| {
            let cfg = BrokerConfig::clone(&cfg);
            s.apply_config(cfg)
        });
        join_all(jobs).await;
        if current.broker_permission != cfg.broker_permission {
            // The name servers learn the new perm from a registration with a new data version.
            shard
                .topics
                .borrow_mut()
                .data_version
                .next(crate::state::topics::now_ms());
            crate::role::control::register_soon(shard);
        }
    }
    let keys: Vec<&str> = changes.iter().map(|(k, _)| k.as_str()).collect();
    tracing::info!(
        "broker config updated ({keys:?}); written to {}",
        path.display()
    );
    ok()
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
    }
}
