//! The console's shared state (`Console`: settings, login sessions, admin clients) and the JSON
//! response for a failed client call.

use std::time::Duration;

use client::acl::Credentials;
use client::ClientError;
use mqadmin::admin::Admin;
use serde_json::json;

use crate::cli::Cli;
use crate::http::Response;
use crate::session;

/// The console's state: its options and the logged-in operators.
pub struct Console {
    pub cli: Cli,
    pub sessions: session::Sessions,
}

impl Console {
    pub fn new(cli: Cli) -> Console {
        Console {
            cli,
            sessions: session::Sessions::default(),
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.cli.timeout_ms.max(1))
    }

    /// An `Admin` signing with `credentials` (none: unsigned).
    pub fn admin(&self, credentials: Option<Credentials>) -> Result<Admin, ClientError> {
        Ok(Admin::new(&self.cli.namesrv, self.timeout())?.with_credentials(credentials))
    }

    /// The `Admin` pages read with: the console's own account, when it has one.
    pub fn reader(&self) -> Result<Admin, ClientError> {
        let credentials = match (&self.cli.access_key, &self.cli.secret_key) {
            (Some(a), Some(s)) => Some(Credentials {
                access_key: a.clone(),
                secret_key: s.clone(),
            }),
            _ => None,
        };
        self.admin(credentials)
    }
}

/// An error from the cluster as an HTTP answer: bad input 400, an ACL refusal 403, anything else
/// from the cluster 502.
pub fn error_response(e: &ClientError) -> Response {
    let status = match e {
        ClientError::Invalid(_) => 400,
        ClientError::Response { code, .. } if *code == protocol::response_code::NO_PERMISSION => {
            403
        }
        _ => 502,
    };
    Response::json(status, &json!({ "error": e.to_string() }))
}
