//! Deciding one request against a loaded `plain_acl.yml`, in RocketMQ's order: global white address,
//! known access key, the account's white address, signature, admin-only codes, resource permissions.

use std::net::IpAddr;

use protocol::RemotingCommand;

use super::config::{Account, PlainAcl};
use super::perm;
use super::resources::{needed, AclRule, Resource};
use super::signature::{signed_content, verify, ACCESS_KEY, SIGNATURE};

/// Why a request was refused (sent back as the NO_PERMISSION remark).
pub type Denied = String;

/// Accepts or refuses `request` from `peer`; `rule` says what its code needs.
pub fn validate(
    acl: &PlainAcl,
    request: &RemotingCommand,
    peer: IpAddr,
    rule: AclRule,
) -> Result<(), Denied> {
    if acl
        .global_white_remote_addresses
        .iter()
        .any(|p| p.matches(peer))
    {
        return Ok(());
    }
    let access_key = request.ext(ACCESS_KEY).filter(|k| !k.is_empty());
    let Some(access_key) = access_key else {
        return Err(format!(
            "No accessKey is configured (request code {})",
            request.code
        ));
    };
    let Some(account) = acl.accounts.get(access_key) else {
        return Err(format!("No acl config for {access_key}"));
    };
    if account.white_remote_address.matches(peer) {
        return Ok(());
    }
    let signature = request.ext(SIGNATURE).unwrap_or_default();
    if !verify(&signed_content(request), &account.secret_key, signature) {
        return Err(format!("Check signature failed for accessKey={access_key}"));
    }
    if rule.needs_admin() && !account.admin {
        return Err(format!(
            "Need admin permission for request code={}, but accessKey={access_key} is not",
            request.code
        ));
    }
    // An admin account with no explicit permissions may touch everything, as in RocketMQ.
    if account.admin && account.topic_perms.is_empty() && account.group_perms.is_empty() {
        return Ok(());
    }
    for (resource, need) in needed(rule, request)? {
        let owned = owned_perm(account, &resource);
        if !perm::allows(need, owned) {
            return Err(format!(
                "No permission for {resource}: needs {}, accessKey={access_key} has {}",
                perm::name(need),
                perm::name(owned)
            ));
        }
    }
    Ok(())
}

fn owned_perm(account: &Account, resource: &Resource) -> u8 {
    match resource {
        Resource::Topic(t) => account
            .topic_perms
            .get(t)
            .copied()
            .unwrap_or(account.default_topic_perm),
        Resource::Group(g) => account
            .group_perms
            .get(g)
            .copied()
            .unwrap_or(account.default_group_perm),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `validate` under the rule the request table gives the codes these tests send.
    fn validate(acl: &PlainAcl, request: &RemotingCommand, peer: IpAddr) -> Result<(), Denied> {
        let rule = match request.code {
            code::SEND_MESSAGE_V2 => AclRule::SendV2,
            code::PULL_MESSAGE => AclRule::Pull,
            code::UPDATE_AND_CREATE_TOPIC => AclRule::Admin,
            _ => AclRule::Free,
        };
        super::validate(acl, request, peer, rule)
    }
    use crate::feature::acl::config::parse;
    use crate::feature::acl::signature::sign;
    use protocol::request_code as code;

    const ACL: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
  - accessKey: rocketmq2
    secretKey: 87654321
    whiteRemoteAddress: 192.168.1.*
    admin: true
"#;

    fn signed(mut req: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
        req.set_ext(ACCESS_KEY, ak);
        let sig = sign(&signed_content(&req), sk);
        req.set_ext(SIGNATURE, &sig);
        req
    }

    fn send(topic: &str) -> RemotingCommand {
        RemotingCommand::request(code::SEND_MESSAGE_V2)
            .with_ext("a", "PG")
            .with_ext("b", topic)
            .with_body(&b"body"[..])
    }

    fn local() -> IpAddr {
        "127.0.0.1".parse().unwrap()
    }

    #[test]
    fn right_keys_and_perms_pass() {
        let acl = parse(ACL).unwrap();
        validate(
            &acl,
            &signed(send("topicB"), "RocketMQ", "12345678"),
            local(),
        )
        .unwrap();
    }

    #[test]
    fn wrong_secret_or_unknown_key_or_tampering_fail() {
        let acl = parse(ACL).unwrap();
        let e = validate(&acl, &signed(send("topicB"), "RocketMQ", "wrong"), local()).unwrap_err();
        assert!(e.contains("signature"), "{e}");
        let e = validate(&acl, &signed(send("topicB"), "nobody", "x"), local()).unwrap_err();
        assert!(e.contains("No acl config"), "{e}");
        let e = validate(&acl, &send("topicB"), local()).unwrap_err();
        assert!(e.contains("No accessKey"), "{e}");
        let mut tampered = signed(send("topicB"), "RocketMQ", "12345678");
        tampered.set_body(&b"other body"[..]);
        assert!(validate(&acl, &tampered, local()).is_err());
    }

    #[test]
    fn perms_are_checked() {
        let acl = parse(ACL).unwrap();
        // topicC is SUB only; topicX falls back to defaultTopicPerm DENY.
        for topic in ["topicC", "topicX"] {
            let e =
                validate(&acl, &signed(send(topic), "RocketMQ", "12345678"), local()).unwrap_err();
            assert!(e.contains(&format!("topic={topic}")), "{e}");
        }
        let pull = |group: &str| {
            RemotingCommand::request(code::PULL_MESSAGE)
                .with_ext("topic", "topicC")
                .with_ext("consumerGroup", group)
        };
        validate(
            &acl,
            &signed(pull("groupB"), "RocketMQ", "12345678"),
            local(),
        )
        .unwrap();
        let e = validate(
            &acl,
            &signed(pull("groupA"), "RocketMQ", "12345678"),
            local(),
        )
        .unwrap_err();
        assert!(e.contains("group=groupA"), "{e}");
    }

    #[test]
    fn admin_codes_need_admin() {
        let acl = parse(ACL).unwrap();
        let create = RemotingCommand::request(code::UPDATE_AND_CREATE_TOPIC).with_ext("topic", "N");
        let e = validate(
            &acl,
            &signed(create.clone(), "RocketMQ", "12345678"),
            local(),
        )
        .unwrap_err();
        assert!(e.contains("admin"), "{e}");
        validate(&acl, &signed(create, "rocketmq2", "87654321"), local()).unwrap();
    }

    #[test]
    fn white_addresses_skip_the_checks() {
        let acl = parse(ACL).unwrap();
        validate(&acl, &send("topicX"), "10.10.103.7".parse().unwrap()).unwrap();
        let unsigned = send("topicX").with_ext(ACCESS_KEY, "rocketmq2");
        validate(&acl, &unsigned, "192.168.1.20".parse().unwrap()).unwrap();
        assert!(validate(&acl, &unsigned, local()).is_err());
    }
}
