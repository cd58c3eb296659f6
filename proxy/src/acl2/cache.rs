//! A small cache of what brokers answered about users and ACLs, as Apache's proxy keeps them (Guava's
//! `maximumSize`, `expireAfterAccess`, `refreshAfterWrite`): "not found" is cached too; an entry older
//! than the refresh time is still answered once while it is asked again; an entry unused for the
//! expiry time is dropped; when full, the least recently used entry goes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::config::CacheConfig;

struct Entry<V> {
    /// `None`: the broker has no such user or ACL.
    value: Option<V>,
    written: Instant,
    accessed: Instant,
    refreshing: bool,
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<V> {
    /// Nothing usable: ask the broker and [`Cache::put`] the answer.
    Miss,
    /// A fresh answer.
    Hit(Option<V>),
    /// An answer due for refresh: use it, and ask the broker again (this caller alone is told so
    /// until the answer is put or [`Cache::refresh_failed`]).
    Refresh(Option<V>),
}

pub struct Cache<V> {
    cfg: CacheConfig,
    entries: Mutex<HashMap<String, Entry<V>>>,
}

impl<V: Clone> Cache<V> {
    pub fn new(cfg: CacheConfig) -> Cache<V> {
        Cache {
            cfg,
            entries: Mutex::default(),
        }
    }

    pub fn lookup(&self, key: &str, now: Instant) -> Lookup<V> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = entries.get_mut(key) else {
            return Lookup::Miss;
        };
        if now.saturating_duration_since(entry.accessed) >= self.cfg.expire {
            entries.remove(key);
            return Lookup::Miss;
        }
        entry.accessed = now;
        if now.saturating_duration_since(entry.written) >= self.cfg.refresh && !entry.refreshing {
            entry.refreshing = true;
            return Lookup::Refresh(entry.value.clone());
        }
        Lookup::Hit(entry.value.clone())
    }

    pub fn put(&self, key: &str, value: Option<V>, now: Instant) {
        if self.cfg.max == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.contains_key(key) && entries.len() >= self.cfg.max {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.accessed)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                entries.remove(&k);
            }
        }
        entries.insert(
            key.to_owned(),
            Entry {
                value,
                written: now,
                accessed: now,
                refreshing: false,
            },
        );
    }

    /// A refresh could not ask the broker: the old answer stays, and a later lookup tries again.
    pub fn refresh_failed(&self, key: &str) {
        if let Some(e) = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(key)
        {
            e.refreshing = false;
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cache(max: usize) -> Cache<u32> {
        Cache::new(CacheConfig {
            max,
            expire: Duration::from_secs(10),
            refresh: Duration::from_secs(3),
        })
    }

    #[test]
    fn answers_are_refreshed_once_after_the_refresh_time() {
        let c = cache(10);
        let t0 = Instant::now();
        assert_eq!(c.lookup("a", t0), Lookup::Miss);
        c.put("a", Some(1), t0);
        c.put("nobody", None, t0);
        assert_eq!(
            c.lookup("a", t0 + Duration::from_secs(2)),
            Lookup::Hit(Some(1))
        );
        assert_eq!(c.lookup("nobody", t0), Lookup::Hit(None));
        let t3 = t0 + Duration::from_secs(3);
        assert_eq!(c.lookup("a", t3), Lookup::Refresh(Some(1)));
        // One refresh at a time: the others use the old answer.
        assert_eq!(c.lookup("a", t3), Lookup::Hit(Some(1)));
        c.refresh_failed("a");
        assert_eq!(c.lookup("a", t3), Lookup::Refresh(Some(1)));
        c.put("a", Some(2), t3);
        assert_eq!(c.lookup("a", t3), Lookup::Hit(Some(2)));
    }

    #[test]
    fn unused_entries_expire_and_the_least_recently_used_goes_when_full() {
        let c = cache(2);
        let t0 = Instant::now();
        c.put("a", Some(1), t0);
        c.put("b", Some(2), t0 + Duration::from_secs(1));
        // `a` used after `b` was written: `b` is the least recently used.
        assert_eq!(
            c.lookup("a", t0 + Duration::from_secs(2)),
            Lookup::Hit(Some(1))
        );
        c.put("c", Some(3), t0 + Duration::from_secs(2));
        assert_eq!(c.len(), 2);
        assert_eq!(c.lookup("b", t0 + Duration::from_secs(2)), Lookup::Miss);
        assert_eq!(
            c.lookup("c", t0 + Duration::from_secs(2)),
            Lookup::Hit(Some(3))
        );
        // Unused for the expiry time: gone.
        assert_eq!(c.lookup("c", t0 + Duration::from_secs(12)), Lookup::Miss);
        let off = cache(0);
        off.put("a", Some(1), t0);
        assert!(off.is_empty());
    }
}
