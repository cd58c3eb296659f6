//! The pages, compiled into the binary: one HTML shell, its script and its style sheet (plain
//! JavaScript, no build step).

const INDEX: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const STYLE: &str = include_str!("../web/style.css");

/// The content type and body served at `path`.
pub fn find(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some(("text/html; charset=utf-8", INDEX)),
        "/app.js" => Some(("text/javascript; charset=utf-8", APP_JS)),
        "/style.css" => Some(("text/css; charset=utf-8", STYLE)),
        _ => None,
    }
}
