//! `console`: a web console for RocketMQ-compatible clusters, a process of its own beside the name
//! servers and brokers. It serves pages (embedded, `assets`) and a JSON API (`api`) built on mqadmin's
//! commands over RocketMQ remoting, live charts from the brokers' Prometheus endpoints (`metrics`),
//! and admin actions for operators logged in with an ACL account (`actions`, `session`).

pub mod actions;
pub mod api;
pub mod assets;
pub mod cli;
pub mod http;
pub mod metrics;
pub mod session;

use std::rc::Rc;
use std::time::Duration;

use client::acl::Credentials;
use client::ClientError;
use mqadmin::admin::Admin;
use serde_json::json;

use crate::cli::Cli;
use crate::http::{Request, Response};

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

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

/// Routes one request.
pub async fn handle(console: Rc<Console>, req: Request) -> Response {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/api/session") => {
            let who = req
                .cookie(session::COOKIE)
                .and_then(|id| console.sessions.credentials(id));
            Response::json(
                200,
                &json!({
                    "adminEnabled": console.cli.enable_admin,
                    "loggedIn": who.is_some(),
                    "accessKey": who.map(|c| c.access_key),
                    "namesrv": console.cli.namesrv,
                }),
            )
        }
        ("POST", "/api/login") => actions::login(&console, &req).await,
        ("POST", "/api/logout") => actions::logout(&console, &req),
        ("POST", p) if p.starts_with("/api/admin/") => actions::act(&console, &req).await,
        ("GET", p) if p.starts_with("/api/") => match api::get(&console, &req).await {
            Ok(v) => Response::json(200, &v),
            Err(e) => error_response(&e),
        },
        ("GET", p) => match assets::find(p) {
            Some((content_type, body)) => Response::new(200, content_type, body),
            None => Response::new(404, "text/plain", "not found\n"),
        },
        _ => Response::new(405, "text/plain", "method not allowed\n"),
    }
}

/// Serves the console on `cli.listen` until the process ends.
pub async fn serve(cli: Cli) -> std::io::Result<()> {
    let listener = http::bind(cli.listen)?;
    tracing::info!(
        "console on http://{} (name servers {}; admin actions {})",
        cli.listen,
        cli.namesrv,
        if cli.enable_admin {
            "enabled for logged-in ACL accounts"
        } else {
            "disabled"
        }
    );
    remoting::sd_notify::notify_ready("console serving");
    let console = Rc::new(Console::new(cli));
    http::serve(listener, move |req| handle(console.clone(), req)).await;
    Ok(())
}
