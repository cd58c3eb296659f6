//! `Caller`: who is calling an RPC, read from the SDK's request metadata and checked against the
//! proxy's ACL.

use tonic::Request;

use crate::state::Proxy;
use crate::status::ProxyError;
use protocol::signature::Credentials;

/// Who is calling: from the SDK's request metadata.
pub struct Caller {
    pub client_id: String,
    pub namespace: String,
    /// What the proxy signs the call's remoting requests with: the plain ACL account the SDK signed
    /// with, else ACL 2.0's `innerClientAuthenticationCredentials` (the SDK's user is checked by the
    /// proxy itself, as Apache's cluster-mode proxy does), else nothing.
    pub creds: Option<Credentials>,
}

impl Caller {
    pub fn of<T>(proxy: &Proxy, req: &Request<T>) -> Result<Caller, ProxyError> {
        let md = req.metadata();
        let get = |k: &str| {
            md.get(k)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let creds = match &proxy.acl {
            Some(acl) => Some(acl.authenticate(md)?),
            None => proxy.acl2.cfg.inner_credentials.clone(),
        };
        Ok(Caller {
            client_id: get("x-mq-client-id"),
            namespace: get("x-mq-namespace"),
            creds,
        })
    }
}
