//! Signing requests for brokers with plain ACL on, as the Java client's `AclClientRPCHook`: the
//! account's `AccessKey` goes into the extFields and `Signature` is computed over them and the body.

use protocol::RemotingCommand;
use remoting::RpcHook;

/// An account of the brokers' `plain_acl.yml` (protocol's, shared with the proxy).
pub use protocol::signature::Credentials;

/// The hook that signs every request of a connection with `Credentials`.
pub struct AclRpcHook {
    pub credentials: Credentials,
}

impl RpcHook for AclRpcHook {
    fn before_request(&self, request: &mut RemotingCommand) {
        protocol::signature::sign_request(request, &self.credentials);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::signature::{signed_content, verify, ACCESS_KEY, SIGNATURE};

    #[test]
    fn a_signed_request_verifies_with_the_same_secret_only() {
        let hook = AclRpcHook {
            credentials: Credentials {
                access_key: "ops".into(),
                secret_key: "s3cret".into(),
            },
        };
        let mut req = crate::request::request(17, protocol::ExtFields::new())
            .with_ext("topic", "T")
            .with_body(&b"x"[..]);
        hook.before_request(&mut req);
        assert_eq!(req.ext(ACCESS_KEY), Some("ops"));
        let sig = req.ext(SIGNATURE).unwrap().to_owned();
        assert!(verify(&signed_content(&req), "s3cret", &sig));
        assert!(!verify(&signed_content(&req), "other", &sig));
        assert!(!format!("{:?}", hook.credentials).contains("s3cret"));
    }
}
