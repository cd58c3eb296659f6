//! Which filter a pull uses: a subscription's TAG filter or its compiled SQL92 filter, from the
//! expression type (`TAG`, `SQL92`), and the per-shard cache that compiles each (group, topic,
//! expression) once, for the subscriptions of heartbeats and for those pulls carry.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use protocol::body::SubscriptionData;

use crate::feature::sql_filter::{SqlError, SqlFilter};
use crate::feature::tag_filter::TagFilter;
use crate::shard::Shard;

/// The consumers' subscriptions as one shard uses them (from heartbeats, broadcast by shard 0), and
/// the SQL92 filters it compiled.
#[derive(Default)]
pub struct Subscriptions {
    /// group -> topic -> filter.
    by_group: RefCell<HashMap<String, HashMap<String, Registered>>>,
    /// SQL92 filters compiled on this shard, for registered subscriptions and for pulls.
    pub sql_filters: RefCell<SqlCache>,
    /// Groups whose online consumers consume by broadcast.
    broadcasting: RefCell<HashSet<String>>,
}

/// This shard's copy of the consumers' subscriptions.
pub fn subscriptions(shard: &Shard) -> Rc<Subscriptions> {
    shard.extensions.get()
}

impl Subscriptions {
    /// The filter a consumer group registered for a topic, if any.
    pub fn registered_filter(&self, group: &str, topic: &str) -> Option<Registered> {
        self.by_group
            .borrow()
            .get(group)
            .and_then(|t| t.get(topic))
            .cloned()
    }

    /// The topics a group registered subscriptions to, if it registered any.
    pub fn subscribed_topics(&self, group: &str) -> Option<Vec<String>> {
        self.by_group
            .borrow()
            .get(group)
            .map(|topics| topics.keys().cloned().collect())
    }

    /// Applies a group's subscription broadcast.
    pub fn set_group_subscriptions(&self, group: String, subs: Vec<SubscriptionData>) {
        let mut all = self.by_group.borrow_mut();
        if subs.is_empty() {
            all.remove(&group);
        } else {
            let mut cache = self.sql_filters.borrow_mut();
            let map = subs
                .iter()
                .map(|s| (s.topic.clone(), cache.registered(&group, s)))
                .collect();
            all.insert(group, map);
        }
    }

    /// Records whether a group's online consumers consume by broadcast.
    pub fn set_group_broadcasting(&self, group: &str, broadcasting: bool) {
        let mut all = self.broadcasting.borrow_mut();
        if broadcasting {
            all.insert(group.to_owned());
        } else {
            all.remove(group);
        }
    }

    /// Whether a group's online consumers consume by broadcast.
    pub fn is_broadcasting(&self, group: &str) -> bool {
        self.broadcasting.borrow().contains(group)
    }
}

/// RocketMQ's `ExpressionType.SQL92`.
pub const SQL92: &str = "SQL92";

/// Whether an expression type means tags: `TAG` (any case, as this broker always read it) or none.
pub fn is_tag_type(expression_type: &str) -> bool {
    expression_type.is_empty() || expression_type.eq_ignore_ascii_case("TAG")
}

/// What a pull accepts.
#[derive(Debug, Clone)]
pub enum PullFilter {
    Tags(TagFilter),
    Sql(Rc<SqlFilter>),
}

impl PullFilter {
    pub const ALL: PullFilter = PullFilter::Tags(TagFilter::All);

    /// Whether the filter looks at tagsCodes at all.
    pub fn checks_tags(&self) -> bool {
        matches!(self, PullFilter::Tags(t) if !t.is_all())
    }

    /// Whether the filter looks at stored records (their properties).
    pub fn checks_records(&self) -> bool {
        matches!(self, PullFilter::Sql(_))
    }

    pub fn accepts_tags_code(&self, tags_code: i64) -> bool {
        match self {
            PullFilter::Tags(t) => t.matches(tags_code),
            PullFilter::Sql(_) => true,
        }
    }

    pub fn accepts_record(&self, record: &[u8]) -> bool {
        match self {
            PullFilter::Tags(_) => true,
            PullFilter::Sql(f) => f.matches_record(record),
        }
    }
}

/// A consumer group's registered subscription to one topic, as this shard uses it.
#[derive(Debug, Clone)]
pub enum Registered {
    Filter(PullFilter),
    /// A filter expression that does not compile, or of a type this broker has no filter for:
    /// pulls relying on it are refused, as Apache's broker refuses them (FILTER_DATA_NOT_EXIST).
    Unusable,
}

/// Most expressions one shard keeps compiled, and most bytes of their text; past either the cache
/// starts over (clients name groups and send expressions freely: the memory stays bounded, and the
/// filters in use are compiled again at their next pull).
const CACHE_LIMIT: usize = 4096;
const CACHE_BYTES: usize = 4 * 1024 * 1024;

type Compiled = Result<Rc<SqlFilter>, SqlError>;

/// Compiled SQL92 filters by (group, topic), with the expression they were compiled from.
#[derive(Default)]
pub struct SqlCache {
    entries: HashMap<(String, String), (Rc<str>, Compiled)>,
    /// Bytes of the cached expressions' text.
    bytes: usize,
}

impl SqlCache {
    /// The filter of `expression` for (group, topic): compiled the first time, or again when the
    /// pair's expression changed.
    pub fn compile(&mut self, group: &str, topic: &str, expression: &str) -> Compiled {
        let key = (group.to_owned(), topic.to_owned());
        if let Some((cached, result)) = self.entries.get(&key) {
            if &**cached == expression {
                return result.clone();
            }
        }
        let result = SqlFilter::compile(expression).map(Rc::new);
        if expression.len() > CACHE_BYTES {
            return result;
        }
        if self.entries.len() >= CACHE_LIMIT || self.bytes + expression.len() > CACHE_BYTES {
            self.entries.clear();
            self.bytes = 0;
        }
        self.bytes += expression.len();
        if let Some((old, _)) = self
            .entries
            .insert(key, (Rc::from(expression), result.clone()))
        {
            self.bytes -= old.len();
        }
        result
    }

    /// What a registered subscription filters by.
    pub fn registered(&mut self, group: &str, sub: &SubscriptionData) -> Registered {
        if is_tag_type(&sub.expression_type) {
            return Registered::Filter(PullFilter::Tags(TagFilter::from_subscription(sub)));
        }
        if sub.expression_type != SQL92 {
            return Registered::Unusable;
        }
        match self.compile(group, &sub.topic, &sub.sub_string) {
            Ok(f) => Registered::Filter(PullFilter::Sql(f)),
            Err(e) => {
                tracing::warn!(
                    "group {group} subscribes to {} with a SQL92 filter that does not compile: {e}",
                    sub.topic
                );
                Registered::Unusable
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(topic: &str, expression: &str, kind: &str) -> SubscriptionData {
        SubscriptionData {
            topic: topic.into(),
            sub_string: expression.into(),
            expression_type: kind.into(),
            ..SubscriptionData::default()
        }
    }

    #[test]
    fn compiled_once_per_group_topic_and_expression() {
        let mut cache = SqlCache::default();
        let a = cache.compile("g", "T", "a > 1").unwrap();
        let again = cache.compile("g", "T", "a > 1").unwrap();
        assert!(
            Rc::ptr_eq(&a, &again),
            "the same (group, topic, expression) compiles once"
        );
        let other_topic = cache.compile("g", "U", "a > 1").unwrap();
        assert!(!Rc::ptr_eq(&a, &other_topic));
        let changed = cache.compile("g", "T", "a > 2").unwrap();
        assert!(!Rc::ptr_eq(&a, &changed));
        assert!(!Rc::ptr_eq(
            &changed,
            &cache.compile("g", "T", "a > 1").unwrap()
        ));
        assert!(cache.compile("g", "T", "a >").is_err());
    }

    #[test]
    fn memory_stays_bounded() {
        let mut cache = SqlCache::default();
        let long = format!("a = '{}'", "x".repeat(CACHE_BYTES / 3));
        for i in 0..10 {
            cache.compile(&format!("g{i}"), "T", &long).unwrap();
            assert!(cache.bytes <= CACHE_BYTES);
        }
        for i in 0..CACHE_LIMIT + 10 {
            cache.compile(&format!("g{i}"), "T", "a > 1").unwrap();
            assert!(cache.entries.len() <= CACHE_LIMIT);
        }
        // Replacing a pair's expression accounts for the old text.
        let mut cache = SqlCache::default();
        cache.compile("g", "T", "a > 1").unwrap();
        cache.compile("g", "T", "a > 22").unwrap();
        assert_eq!(cache.bytes, "a > 22".len());
    }

    #[test]
    fn registered_by_expression_type() {
        let mut cache = SqlCache::default();
        let tags = cache.registered("g", &sub("T", "TagA", "TAG"));
        assert!(matches!(
            tags,
            Registered::Filter(PullFilter::Tags(TagFilter::Codes(_)))
        ));
        let sql = cache.registered("g", &sub("T", "a > 1", SQL92));
        let Registered::Filter(f) = sql else {
            panic!("{sql:?}")
        };
        assert!(f.checks_records() && !f.checks_tags());
        assert!(matches!(
            cache.registered("g", &sub("T", "a >", SQL92)),
            Registered::Unusable
        ));
        assert!(matches!(
            cache.registered("g", &sub("T", "a > 1", "sql92")),
            Registered::Unusable
        ));
        assert!(matches!(
            cache.registered("g", &sub("T", "x", "GROOVY")),
            Registered::Unusable
        ));
    }
}
