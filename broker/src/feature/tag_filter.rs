//! Tag filtering of pulls: a subscription expression (`"TagA || TagB"` or `*`) becomes a set of
//! tagsCodes (Java `String.hashCode()` of each tag) matched against ConsumeQueue entries.

use protocol::body::SubscriptionData;
use protocol::message::properties::java_string_hash;

/// What a pull accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagFilter {
    All,
    /// tagsCodes of the accepted tags.
    Codes(Vec<i64>),
}

impl TagFilter {
    /// Parses a TAG expression as RocketMQ's `FilterAPI` does: `*` or empty means all, otherwise tags
    /// separated by `||`, each trimmed, empty ones skipped.
    pub fn parse(expression: &str) -> TagFilter {
        let expression = expression.trim();
        if expression.is_empty() || expression == protocol::body::SUB_ALL {
            return TagFilter::All;
        }
        let mut codes: Vec<i64> = expression
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| i64::from(java_string_hash(t)))
            .collect();
        codes.sort_unstable();
        codes.dedup();
        if codes.is_empty() {
            TagFilter::All
        } else {
            TagFilter::Codes(codes)
        }
    }

    /// From a consumer's registered subscription (its codeSet when present, else its expression).
    pub fn from_subscription(sub: &SubscriptionData) -> TagFilter {
        if sub.sub_string.trim() == protocol::body::SUB_ALL {
            return TagFilter::All;
        }
        if sub.code_set.is_empty() {
            return TagFilter::parse(&sub.sub_string);
        }
        let mut codes: Vec<i64> = sub.code_set.iter().map(|c| i64::from(*c)).collect();
        codes.sort_unstable();
        codes.dedup();
        TagFilter::Codes(codes)
    }

    pub fn is_all(&self) -> bool {
        matches!(self, TagFilter::All)
    }

    /// Whether a ConsumeQueue entry with this tagsCode passes. Java compares the code set (ints) with
    /// the stored long cast to int, so compare the low 32 bits the same way.
    pub fn matches(&self, tags_code: i64) -> bool {
        match self {
            TagFilter::All => true,
            TagFilter::Codes(codes) => codes.binary_search(&i64::from(tags_code as i32)).is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::message::properties::tags_code;

    #[test]
    fn expressions() {
        assert!(TagFilter::parse("*").is_all());
        assert!(TagFilter::parse("  ").is_all());
        let f = TagFilter::parse("TagA || TagB ||  ");
        assert!(f.matches(tags_code("TagA")));
        assert!(f.matches(tags_code("TagB")));
        assert!(!f.matches(tags_code("TagC")));
        assert!(!f.matches(0), "untagged messages do not match a tag list");
        let sub = SubscriptionData {
            sub_string: "TagC".into(),
            code_set: vec![java_string_hash("TagC")],
            ..SubscriptionData::default()
        };
        let f = TagFilter::from_subscription(&sub);
        assert!(f.matches(tags_code("TagC")) && !f.matches(tags_code("TagA")));
        let no_codes = SubscriptionData {
            sub_string: "X||Y".into(),
            ..SubscriptionData::default()
        };
        assert!(TagFilter::from_subscription(&no_codes).matches(tags_code("Y")));
    }
}
