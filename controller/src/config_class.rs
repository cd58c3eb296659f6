//! The classes a config key can be in (applied, refused for some values, not used) and when a
//! refused key's value is one this server must not start with.

/// What this server does with one config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Read by the server's `set`.
    Applied,
    /// Not built, and a value that asks for it is refused at start (`when`), with what to do.
    Refused(Refusal),
    /// Accepted and ignored, with why that is harmless here.
    NotUsed(&'static str),
}

/// A key whose feature is absent: which values are refused, and the error's advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub when: When,
    pub why: &'static str,
}

/// Which values of a refused key ask for the absent feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Anything but empty, `false`, `disabled` or `none`.
    NotOff,
    /// Any non-empty value.
    NotEmpty,
    /// Anything but this value (Apache's default).
    NotDefault(&'static str),
    /// A number above this, or not a number.
    Above(u64),
}

impl When {
    /// Whether `value` asks for what this server does not do.
    pub fn refuses(self, value: &str) -> bool {
        let v = value.trim();
        match self {
            When::NotOff => !matches!(
                v.to_ascii_lowercase().as_str(),
                "" | "false" | "disabled" | "none"
            ),
            When::NotEmpty => !v.is_empty(),
            When::NotDefault(default) => v != default,
            When::Above(n) => v.parse::<u64>().map_or(true, |x| x > n),
        }
    }

    /// The refused values, in words (for the docs).
    pub fn describe(self) -> String {
        match self {
            When::NotOff => "refused unless off (false, disabled, none or empty)".into(),
            When::NotEmpty => "refused when set to any value".into(),
            When::NotDefault(d) => format!("refused unless `{d}` (Apache's default)"),
            When::Above(n) => format!("refused above {n}"),
        }
    }
}

/// What a server does with a key of its file that its `set` did not read: `Ok(Some(warning))`
/// for a key it does not use (with the reason) or does not know (a typo), `Ok(None)` for a refused
/// key's harmless value, `Err` naming the key and what to do for a value it must not start with.
pub fn unapplied(class: Option<&Class>, key: &str, value: &str) -> Result<Option<String>, String> {
    match class {
        Some(Class::NotUsed(why)) => Ok(Some(format!(
            "config key `{key}` is accepted but not used: {why}"
        ))),
        Some(Class::Refused(r)) if r.when.refuses(value) => Err(format!(
            "config key `{key}` has an invalid value `{value}`: {}",
            r.why
        )),
        Some(Class::Refused(_)) => Ok(None),
        Some(Class::Applied) | None => Ok(Some(format!("unknown config key `{key}` ignored"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_values() {
        assert!(When::NotOff.refuses("true"));
        assert!(When::NotOff.refuses("permissive"));
        assert!(!When::NotOff.refuses(" FALSE "));
        assert!(!When::NotOff.refuses(""));
        assert!(When::NotEmpty.refuses("x"));
        assert!(!When::NotEmpty.refuses("  "));
        assert!(When::NotDefault("{}").refuses("{a}"));
        assert!(!When::NotDefault("{}").refuses("{}"));
        assert!(When::Above(2).refuses("3"));
        assert!(When::Above(2).refuses("two"));
        assert!(!When::Above(2).refuses("2"));
    }
}
