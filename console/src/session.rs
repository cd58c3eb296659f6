//! Logged-in operators: a random session id (the `console_session` cookie) maps to the ACL account
//! they logged in with; sessions end at logout or after `IDLE_LIMIT` without a request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant};

use client::acl::Credentials;

/// The cookie that carries the session id.
pub const COOKIE: &str = "console_session";
/// A session unused for this long is forgotten.
const IDLE_LIMIT: Duration = Duration::from_secs(8 * 3600);

struct Session {
    credentials: Credentials,
    last_used: Instant,
}

#[derive(Default)]
pub struct Sessions {
    by_id: RefCell<HashMap<String, Session>>,
}

/// 128 random bits from the kernel, as hex.
fn new_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Sessions {
    /// Starts a session for `credentials`; answers its id.
    pub fn open(&self, credentials: Credentials) -> std::io::Result<String> {
        let id = new_id()?;
        let mut by_id = self.by_id.borrow_mut();
        by_id.retain(|_, s| s.last_used.elapsed() < IDLE_LIMIT);
        by_id.insert(
            id.clone(),
            Session {
                credentials,
                last_used: Instant::now(),
            },
        );
        Ok(id)
    }

    /// The account of session `id`, if it is open.
    pub fn credentials(&self, id: &str) -> Option<Credentials> {
        let mut by_id = self.by_id.borrow_mut();
        let session = by_id.get_mut(id)?;
        if session.last_used.elapsed() >= IDLE_LIMIT {
            by_id.remove(id);
            return None;
        }
        session.last_used = Instant::now();
        Some(session.credentials.clone())
    }

    pub fn close(&self, id: &str) {
        self.by_id.borrow_mut().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_open_answer_and_close() {
        let s = Sessions::default();
        let creds = Credentials {
            access_key: "ops".into(),
            secret_key: "k".into(),
        };
        let a = s.open(creds.clone()).unwrap();
        let b = s.open(creds.clone()).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(s.credentials(&a), Some(creds));
        s.close(&a);
        assert_eq!(s.credentials(&a), None);
        assert!(s.credentials(&b).is_some());
        assert_eq!(s.credentials("unknown"), None);
    }
}
