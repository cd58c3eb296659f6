//! The credentials `mqadmin` signs its requests with, where Apache's `mqadmin` finds them
//! (`$ROCKETMQ_HOME/conf/tools.yml`: `accessKey`, `secretKey`), or from `ROCKETMQ_ACCESS_KEY` /
//! `ROCKETMQ_SECRET_KEY`, which win. Plain ACL accounts and ACL 2.0 users sign the same way.

use std::path::Path;

use client::acl::Credentials;

/// The credentials of this run, if any are configured; an unreadable or half-filled source is an
/// error that names it.
pub fn from_environment() -> Result<Option<Credentials>, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match (env("ROCKETMQ_ACCESS_KEY"), env("ROCKETMQ_SECRET_KEY")) {
        (Some(access_key), Some(secret_key)) => {
            return Ok(Some(Credentials {
                access_key,
                secret_key,
            }))
        }
        (None, None) => {}
        _ => {
            return Err(
                "set both ROCKETMQ_ACCESS_KEY and ROCKETMQ_SECRET_KEY, or neither".to_owned(),
            )
        }
    }
    let Some(home) = env("ROCKETMQ_HOME") else {
        return Ok(None);
    };
    let path = Path::new(&home).join("conf").join("tools.yml");
    match std::fs::read_to_string(&path) {
        Ok(text) => from_tools_yml(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `accessKey: ...` and `secretKey: ...` of a tools.yml (top-level scalars, quotes optional).
pub fn from_tools_yml(text: &str) -> Result<Option<Credentials>, String> {
    let value = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
            .filter(|v| !v.is_empty())
    };
    match (value("accessKey"), value("secretKey")) {
        (Some(access_key), Some(secret_key)) => Ok(Some(Credentials {
            access_key,
            secret_key,
        })),
        (None, None) => Ok(None),
        _ => Err("accessKey and secretKey go together".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_yml_as_apache_writes_it() {
        let c = from_tools_yml("accessKey: RocketMQ\nsecretKey: \"12345678\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.secret_key.as_str()),
            ("RocketMQ", "12345678")
        );
        assert!(from_tools_yml("# nothing\n").unwrap().is_none());
        assert!(from_tools_yml("accessKey: a\n").is_err());
    }
}
