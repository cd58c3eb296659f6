//! `plain_acl.yml`, RocketMQ's plain ACL file: global white addresses and accounts with their keys,
//! admin flag, white address, default topic/group permissions and per-topic/per-group permissions.
//!
//! Parsed with `yaml-rust2` (pure Rust, maintained, no unsafe C port) into a tree we walk ourselves, so
//! the file's loose typing (numbers or strings for keys, `admin: "true"`, blank values) is accepted
//! the way RocketMQ's snakeyaml+fastjson loading accepts it.

use std::collections::HashMap;

use yaml_rust2::{Yaml, YamlLoader};

use super::perm;
use super::remote_addr::AddrPattern;

/// One account (`accounts:` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub access_key: String,
    pub secret_key: String,
    pub white_remote_address: AddrPattern,
    pub admin: bool,
    pub default_topic_perm: u8,
    pub default_group_perm: u8,
    /// topic -> permission bits.
    pub topic_perms: HashMap<String, u8>,
    /// group -> permission bits.
    pub group_perms: HashMap<String, u8>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlainAcl {
    pub global_white_remote_addresses: Vec<AddrPattern>,
    /// By access key.
    pub accounts: HashMap<String, Account>,
}

/// Parses the text of a `plain_acl.yml`; the error names what is wrong.
pub fn parse(text: &str) -> Result<PlainAcl, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
    let Some(doc) = docs.first() else {
        return Ok(PlainAcl::default());
    };
    let mut acl = PlainAcl::default();
    for item in list(doc, "globalWhiteRemoteAddresses")? {
        acl.global_white_remote_addresses
            .push(AddrPattern::parse(&scalar(item).unwrap_or_default())?);
    }
    for (i, entry) in list(doc, "accounts")?.iter().enumerate() {
        let account = account(entry).map_err(|e| format!("accounts[{i}]: {e}"))?;
        if acl.accounts.contains_key(&account.access_key) {
            return Err(format!("accessKey `{}` appears twice", account.access_key));
        }
        acl.accounts.insert(account.access_key.clone(), account);
    }
    Ok(acl)
}

fn account(entry: &Yaml) -> Result<Account, String> {
    if !entry.is_hash() {
        return Err("not a mapping".into());
    }
    let access_key = scalar(&entry["accessKey"]).filter(|k| !k.is_empty());
    let secret_key = scalar(&entry["secretKey"]).filter(|k| !k.is_empty());
    let (Some(access_key), Some(secret_key)) = (access_key, secret_key) else {
        return Err("accessKey and secretKey are required".into());
    };
    let admin = match scalar(&entry["admin"]).as_deref().map(str::trim) {
        None | Some("") => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => return Err(format!("admin must be true or false, not `{v}`")),
    };
    let perm_of = |key: &str| scalar(&entry[key]).map_or(perm::DENY, |v| perm::parse(&v));
    Ok(Account {
        white_remote_address: AddrPattern::parse(
            &scalar(&entry["whiteRemoteAddress"]).unwrap_or_default(),
        )?,
        admin,
        default_topic_perm: perm_of("defaultTopicPerm"),
        default_group_perm: perm_of("defaultGroupPerm"),
        topic_perms: resource_perms(entry, "topicPerms")?,
        group_perms: resource_perms(entry, "groupPerms")?,
        access_key,
        secret_key,
    })
}

/// `- name=PERM` lines.
fn resource_perms(entry: &Yaml, key: &str) -> Result<HashMap<String, u8>, String> {
    let mut perms = HashMap::new();
    for item in list(entry, key)? {
        let line = scalar(item).unwrap_or_default();
        let Some((name, p)) = line.split_once('=') else {
            return Err(format!("{key}: `{line}` is not `name=PERM`"));
        };
        perms.insert(name.trim().to_owned(), perm::parse(p));
    }
    Ok(perms)
}

/// A list value; absent or blank is an empty list.
fn list<'a>(parent: &'a Yaml, key: &str) -> Result<&'a [Yaml], String> {
    match &parent[key] {
        Yaml::Array(items) => Ok(items),
        Yaml::Null | Yaml::BadValue => Ok(&[]),
        _ => Err(format!("`{key}` must be a list")),
    }
}

/// A scalar as text (numbers and booleans too: `secretKey: 12345678`); `None` when absent or blank.
fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RocketMQ's distributed example file.
    const EXAMPLE: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
"#;

    #[test]
    fn parses_the_rocketmq_example() {
        let acl = parse(EXAMPLE).unwrap();
        assert_eq!(acl.global_white_remote_addresses.len(), 2);
        assert!(acl.global_white_remote_addresses[0].matches("10.10.103.5".parse().unwrap()));
        let a = &acl.accounts["RocketMQ"];
        assert_eq!(a.secret_key, "12345678");
        assert!(!a.admin);
        assert_eq!(a.white_remote_address, AddrPattern::Nothing);
        assert_eq!(a.default_topic_perm, perm::DENY);
        assert_eq!(a.default_group_perm, perm::SUB);
        assert_eq!(a.topic_perms["topicB"], perm::PUB | perm::SUB);
        assert_eq!(a.group_perms["groupA"], perm::DENY);
        let b = &acl.accounts["rocketmq2"];
        assert!(b.admin);
        assert!(b
            .white_remote_address
            .matches("192.168.1.9".parse().unwrap()));
        assert_eq!(b.default_topic_perm, perm::DENY);
    }

    #[test]
    fn rejects_broken_files() {
        assert!(parse("accounts:\n  - accessKey: x\n").is_err());
        assert!(parse("accounts: 3\n").is_err());
        assert!(parse(
            "accounts:\n  - accessKey: a\n    secretKey: b\n    topicPerms:\n      - nope\n"
        )
        .is_err());
        assert!(parse("accounts: [\n").is_err());
        assert!(parse("globalWhiteRemoteAddresses:\n  - 999.1.1.1\n").is_err());
        let dup =
            "accounts:\n  - accessKey: a\n    secretKey: b\n  - accessKey: a\n    secretKey: c\n";
        assert!(parse(dup).is_err());
    }

    #[test]
    fn empty_file_is_no_accounts() {
        assert_eq!(parse("").unwrap(), PlainAcl::default());
    }
}
