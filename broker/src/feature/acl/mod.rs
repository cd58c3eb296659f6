//! Plain ACL (`aclEnable=true`): every request is checked against `plain_acl.yml` before it is
//! processed; refusals answer NO_PERMISSION with the reason. The file is re-read when it changes.

pub mod config;
pub mod perm;
pub mod remote_addr;
pub mod resources;
pub mod signature;
pub mod validator;

pub use resources::AclRule;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::config::BrokerConfig;
use config::PlainAcl;

/// How often a shard looks at the file's modification time (RocketMQ watches it every 500 ms).
const RELOAD_CHECK_EVERY: Duration = Duration::from_millis(500);

/// Where the ACL file is: `aclFile` if set, else `$ROCKETMQ_HOME/conf/plain_acl.yml` (RocketMQ's
/// place), else `conf/plain_acl.yml` under the working directory.
pub fn acl_file_path(cfg: &BrokerConfig) -> PathBuf {
    if let Some(p) = &cfg.acl_file {
        return p.clone();
    }
    let home = std::env::var_os("ROCKETMQ_HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join("conf").join("plain_acl.yml")
}

/// Reads and parses the ACL file; the error names the file.
pub fn load(path: &Path) -> Result<PlainAcl, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("ACL file {} cannot be read: {e}", path.display()))?;
    config::parse(&text).map_err(|e| format!("ACL file {}: {e}", path.display()))
}

/// Checked at start when `aclEnable=true`: a broker must not serve with an unreadable ACL file.
pub fn check_at_start(cfg: &BrokerConfig) -> Result<(), String> {
    if !cfg.acl_enable {
        return Ok(());
    }
    let path = acl_file_path(cfg);
    let acl = load(&path)?;
    tracing::info!(
        "ACL enabled: {} ({} accounts, {} global white addresses)",
        path.display(),
        acl.accounts.len(),
        acl.global_white_remote_addresses.len()
    );
    Ok(())
}

/// One executor's copy of the file (shards share nothing, so each keeps and reloads its own).
struct Loaded {
    path: PathBuf,
    /// (modified, length) of the file last read.
    stamp: Option<(SystemTime, u64)>,
    checked: Instant,
    /// The last good contents, or why none could be read yet.
    acl: Result<PlainAcl, String>,
}

thread_local! {
    static LOADED: RefCell<Option<Loaded>> = const { RefCell::new(None) };
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Brings this executor's copy up to date with the file (at most every `RELOAD_CHECK_EVERY`).
fn refresh(slot: &mut Option<Loaded>, path: &Path) {
    let fresh = match slot {
        Some(l) if l.path == path => {
            if l.checked.elapsed() < RELOAD_CHECK_EVERY {
                return;
            }
            l.checked = Instant::now();
            let now = stamp(path);
            if now == l.stamp {
                return;
            }
            match load(path) {
                Ok(acl) => {
                    tracing::info!("ACL file {} reloaded", path.display());
                    l.acl = Ok(acl);
                    l.stamp = now;
                }
                Err(e) => {
                    // Keep serving with the last good rules; say so once per change.
                    tracing::error!("{e}; keeping the previous ACL rules");
                    l.stamp = now;
                }
            }
            return;
        }
        _ => Loaded {
            path: path.to_owned(),
            stamp: stamp(path),
            checked: Instant::now(),
            acl: load(path),
        },
    };
    *slot = Some(fresh);
}

/// `None` when `request` may proceed; otherwise the NO_PERMISSION answer with the reason. `rule` is
/// what the request table says its code needs.
pub fn check(
    cfg: &BrokerConfig,
    request: &RemotingCommand,
    peer: SocketAddr,
    rule: AclRule,
) -> Option<RemotingCommand> {
    if !cfg.acl_enable {
        return None;
    }
    let path = acl_file_path(cfg);
    let verdict = LOADED.with(|cell| {
        let mut slot = cell.borrow_mut();
        refresh(&mut slot, &path);
        match slot.as_ref().map(|l| &l.acl) {
            Some(Ok(acl)) => validator::validate(acl, request, peer.ip(), rule),
            Some(Err(e)) => Err(e.clone()),
            None => Err("ACL rules are not loaded".to_owned()),
        }
    });
    match verdict {
        Ok(()) => None,
        Err(reason) => {
            tracing::debug!("ACL refused code {} from {peer}: {reason}", request.code);
            Some(RemotingCommand::response(rc::NO_PERMISSION, Some(reason)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check` of a send (the request table's rule for SEND_MESSAGE_V2).
    fn check(
        cfg: &BrokerConfig,
        request: &RemotingCommand,
        peer: SocketAddr,
    ) -> Option<RemotingCommand> {
        super::check(cfg, request, peer, AclRule::SendV2)
    }
    use protocol::request_code as code;

    fn cfg_for(path: &Path) -> BrokerConfig {
        BrokerConfig {
            acl_enable: true,
            acl_file: Some(path.to_owned()),
            ..BrokerConfig::default()
        }
    }

    fn signed_send(ak: &str, sk: &str) -> RemotingCommand {
        let mut req = RemotingCommand::request(code::SEND_MESSAGE_V2)
            .with_ext("b", "T")
            .with_ext(signature::ACCESS_KEY, ak);
        let sig = signature::sign(&signature::signed_content(&req), sk);
        req.set_ext(signature::SIGNATURE, &sig);
        req
    }

    #[test]
    fn disabled_acl_lets_everything_through() {
        let cfg = BrokerConfig::default();
        let req = RemotingCommand::request(code::SEND_MESSAGE_V2);
        assert!(check(&cfg, &req, "127.0.0.1:1".parse().unwrap()).is_none());
    }

    #[test]
    fn file_changes_are_picked_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain_acl.yml");
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let cfg = cfg_for(&path);
        // No file yet: everything is refused, with the reason.
        let denied = check(&cfg, &signed_send("ak1", "secret1"), peer).unwrap();
        assert_eq!(denied.code, rc::NO_PERMISSION);
        assert!(denied.remark.unwrap_or_default().contains("cannot be read"));
        assert!(check_at_start(&cfg).is_err());

        let rules = |sk: &str| {
            format!(
                "accounts:\n  - accessKey: ak1\n    secretKey: {sk}\n    defaultTopicPerm: PUB\n"
            )
        };
        std::fs::write(&path, rules("secret1")).unwrap();
        std::thread::sleep(RELOAD_CHECK_EVERY + Duration::from_millis(100));
        assert!(check(&cfg, &signed_send("ak1", "secret1"), peer).is_none());
        assert!(check_at_start(&cfg).is_ok());

        // New secret (different length, so the change shows even within one mtime tick).
        std::fs::write(&path, rules("secret22")).unwrap();
        std::thread::sleep(RELOAD_CHECK_EVERY + Duration::from_millis(100));
        let denied = check(&cfg, &signed_send("ak1", "secret1"), peer).unwrap();
        assert!(denied.remark.unwrap_or_default().contains("signature"));
        assert!(check(&cfg, &signed_send("ak1", "secret22"), peer).is_none());

        // A broken edit keeps the last good rules.
        std::fs::write(&path, "accounts: [\n").unwrap();
        std::thread::sleep(RELOAD_CHECK_EVERY + Duration::from_millis(100));
        assert!(check(&cfg, &signed_send("ak1", "secret22"), peer).is_none());
    }
}
