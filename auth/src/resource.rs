//! What an ACL names and what a request touches: `Topic:orders` (literal), `Topic:order*` (prefixed),
//! `Topic:*` (any topic), `*` (anything), likewise `Group:`, `Cluster:` and `Namespace:`; and whether a
//! policy's resource covers a request's (Apache's `Resource.isMatch`).

use std::fmt;

/// The kind of a resource (names as Apache writes them; parsed ignoring case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceType {
    /// `*`: every resource of every kind.
    Any,
    Cluster,
    Namespace,
    Topic,
    Group,
}

impl ResourceType {
    pub fn name(self) -> &'static str {
        match self {
            ResourceType::Any => "Any",
            ResourceType::Cluster => "Cluster",
            ResourceType::Namespace => "Namespace",
            ResourceType::Topic => "Topic",
            ResourceType::Group => "Group",
        }
    }

    pub fn parse(s: &str) -> Option<ResourceType> {
        [
            ResourceType::Any,
            ResourceType::Cluster,
            ResourceType::Namespace,
            ResourceType::Topic,
            ResourceType::Group,
        ]
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(s))
    }
}

/// How a resource's name matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourcePattern {
    /// Every name (`Topic:*`, or `*`).
    Any,
    /// Exactly this name.
    Literal,
    /// Names starting with this (`Topic:order*`).
    Prefixed,
}

/// A resource: its kind, name (empty for the `Any` pattern) and pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    pub kind: ResourceType,
    pub name: String,
    pub pattern: ResourcePattern,
}

const RETRY_PREFIX: &str = "%RETRY%";
const DLQ_PREFIX: &str = "%DLQ%";

impl Resource {
    fn literal(kind: ResourceType, name: &str) -> Resource {
        Resource {
            kind,
            name: name.to_owned(),
            pattern: ResourcePattern::Literal,
        }
    }

    /// The topic a request touches.
    pub fn topic(name: &str) -> Resource {
        Resource::literal(ResourceType::Topic, name)
    }

    /// The group a request touches; a group named by its retry or dead-letter topic is that group.
    pub fn group(name: &str) -> Resource {
        let name = name
            .strip_prefix(RETRY_PREFIX)
            .or_else(|| name.strip_prefix(DLQ_PREFIX))
            .unwrap_or(name);
        Resource::literal(ResourceType::Group, name)
    }

    /// The cluster a request touches.
    pub fn cluster(name: &str) -> Resource {
        Resource::literal(ResourceType::Cluster, name)
    }

    /// Parses a resource key as users write it in `createAcl -r` and as `AclInfo` carries it.
    pub fn parse(key: &str) -> Result<Resource, String> {
        let key = key.trim();
        if key == "*" {
            return Ok(Resource {
                kind: ResourceType::Any,
                name: String::new(),
                pattern: ResourcePattern::Any,
            });
        }
        let (kind, name) = key.split_once(':').unwrap_or((key, ""));
        let kind = ResourceType::parse(kind)
            .filter(|k| *k != ResourceType::Any)
            .ok_or_else(|| {
                format!(
                    "the resource {key:?} is not valid: write Topic:NAME, Group:NAME, Cluster:NAME, \
                     Namespace:NAME (NAME may end in * or be *), or *"
                )
            })?;
        Ok(if name == "*" {
            Resource {
                kind,
                name: String::new(),
                pattern: ResourcePattern::Any,
            }
        } else if let Some(prefix) = name.strip_suffix('*') {
            Resource {
                kind,
                name: prefix.to_owned(),
                pattern: ResourcePattern::Prefixed,
            }
        } else {
            Resource::literal(kind, name)
        })
    }

    /// The key as Apache writes it (`Topic:orders`, `Topic:order*`, `Topic:*`, `*`).
    pub fn key(&self) -> String {
        if self.kind == ResourceType::Any {
            return "*".to_owned();
        }
        match self.pattern {
            ResourcePattern::Any => format!("{}:*", self.kind.name()),
            ResourcePattern::Literal => format!("{}:{}", self.kind.name(), self.name),
            ResourcePattern::Prefixed => format!("{}:{}*", self.kind.name(), self.name),
        }
    }

    /// Whether this (a policy's resource) covers `requested`.
    pub fn matches(&self, requested: &Resource) -> bool {
        if self.kind == ResourceType::Any {
            return true;
        }
        if self.kind != requested.kind {
            return false;
        }
        match self.pattern {
            ResourcePattern::Any => true,
            ResourcePattern::Literal => requested.name == self.name,
            ResourcePattern::Prefixed => requested.name.starts_with(&self.name),
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_print_as_apache_writes_them() {
        for key in [
            "Topic:orders",
            "Topic:order*",
            "Topic:*",
            "Group:g1",
            "Cluster:c",
            "*",
        ] {
            assert_eq!(Resource::parse(key).unwrap().key(), key);
        }
        assert_eq!(Resource::parse("topic:t").unwrap().key(), "Topic:t");
        assert_eq!(
            Resource::parse("Topic:order*").unwrap().pattern,
            ResourcePattern::Prefixed
        );
        assert!(Resource::parse("Queue:q").is_err());
        assert!(Resource::parse("Any:x").is_err());
        assert!(Resource::parse("").is_err());
    }

    #[test]
    fn matching() {
        let t = Resource::topic("orders-eu");
        assert!(Resource::parse("Topic:orders-eu").unwrap().matches(&t));
        assert!(Resource::parse("Topic:orders*").unwrap().matches(&t));
        assert!(Resource::parse("Topic:*").unwrap().matches(&t));
        assert!(Resource::parse("*").unwrap().matches(&t));
        assert!(!Resource::parse("Topic:orders").unwrap().matches(&t));
        assert!(!Resource::parse("Group:*").unwrap().matches(&t));
        assert!(!Resource::parse("Topic:ordersx*").unwrap().matches(&t));
        // A group named by its retry or dead-letter topic is the group.
        assert_eq!(Resource::group("%RETRY%g1"), Resource::group("g1"));
        assert_eq!(Resource::group("%DLQ%g1").key(), "Group:g1");
    }
}
