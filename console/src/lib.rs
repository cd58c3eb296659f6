//! `console`: a web console for RocketMQ-compatible clusters, a process of its own beside the name
//! servers and brokers. It serves pages (embedded, `assets`) and a JSON API (`api`) built on mqadmin's
//! commands over RocketMQ remoting, live charts from the brokers' Prometheus endpoints (`metrics`),
//! and admin actions for operators logged in with an ACL account (`actions`, `session`).

pub mod actions;
pub mod api;
mod app;
pub mod assets;
pub mod cli;
mod clock;
pub mod http;
pub mod metrics;
pub mod session;

use std::rc::Rc;

use serde_json::json;

pub use crate::app::{error_response, Console};
use crate::cli::Cli;
pub use crate::clock::now_ms;
use crate::http::{Request, Response};

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
