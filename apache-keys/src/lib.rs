//! Apache RocketMQ config keys in our servers' config files: the class each key is in (applied, refused
//! for some values, not used), the warning or error a key that `set` did not read gets, and the
//! classification tables rendered for docs/configuration.md. Shared by the broker, the name server and
//! the controller; each keeps its own table and the lists of Apache's keys it was checked against.

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

/// One row of a server's table: keys that share a class (and reason).
pub type Group = (&'static [&'static str], Class);

/// The class of `key` in `table`.
pub fn class_in(table: &'static [Group], key: &str) -> Option<&'static Class> {
    table
        .iter()
        .find(|(keys, _)| keys.contains(&key))
        .map(|(_, class)| class)
}

/// The keys of Apache's key lists (one per line; blank lines and `#` headers left out).
pub fn listed_keys(lists: &[&'static str]) -> std::collections::BTreeSet<&'static str> {
    lists
        .iter()
        .flat_map(|text| text.lines())
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// Checks a server's table against Apache's keys: every Apache key has a class (`class_of`, which may
/// know more than the table), every key of the table is Apache's or one of `ours`, every one of `ours`
/// is classified, and no key is in the table twice. The error lists the offending keys.
pub fn check_coverage(
    table: &'static [Group],
    class_of: impl Fn(&str) -> Option<&'static Class>,
    apache: &std::collections::BTreeSet<&'static str>,
    ours: &[&'static str],
) -> Result<(), String> {
    let keys: Vec<&str> = table.iter().flat_map(|(k, _)| k.iter().copied()).collect();
    let missing: Vec<_> = apache.iter().filter(|k| class_of(k).is_none()).collect();
    let stray: Vec<_> = keys
        .iter()
        .filter(|k| !apache.contains(*k) && !ours.contains(k))
        .collect();
    let unlisted: Vec<_> = ours.iter().filter(|k| class_of(k).is_none()).collect();
    let mut seen = std::collections::BTreeSet::new();
    let twice: Vec<_> = keys.iter().filter(|k| !seen.insert(**k)).collect();
    if missing.is_empty() && stray.is_empty() && unlisted.is_empty() && twice.is_empty() {
        return Ok(());
    }
    Err(format!(
        "Apache keys with no class: {missing:?}; neither Apache's nor ours: {stray:?}; ours \
         without a class: {unlisted:?}; classified twice: {twice:?}"
    ))
}

/// The table as a markdown section for docs/configuration.md: applied keys, refused keys with the
/// values refused and why, not-used keys by reason.
pub fn render(table: &[Group]) -> String {
    let keys = |ks: &[&str]| {
        ks.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let count = |f: &dyn Fn(&Class) -> bool| -> usize {
        table
            .iter()
            .filter(|(_, c)| f(c))
            .map(|(k, _)| k.len())
            .sum()
    };
    let mut out = format!(
        "{} keys: {} applied, {} refused for some values, {} not used.\n\n**Applied**: ",
        table.iter().map(|(k, _)| k.len()).sum::<usize>(),
        count(&|c| matches!(c, Class::Applied)),
        count(&|c| matches!(c, Class::Refused(_))),
        count(&|c| matches!(c, Class::NotUsed(_))),
    );
    let applied: Vec<&str> = table
        .iter()
        .filter(|(_, c)| *c == Class::Applied)
        .flat_map(|(k, _)| k.iter().copied())
        .collect();
    out.push_str(&keys(&applied));
    out.push_str("\n\n**Refused** (the server does not start):\n\n");
    for (ks, class) in table {
        if let Class::Refused(r) = class {
            out.push_str(&format!(
                "- {}: {}. {}\n",
                keys(ks),
                r.when.describe(),
                r.why
            ));
        }
    }
    out.push_str("\n**Not used** (a warning at start names the key and the reason):\n\n");
    for (ks, class) in table {
        if let Class::NotUsed(why) = class {
            out.push_str(&format!("- {}: {}\n", keys(ks), why));
        }
    }
    out
}

/// Checks (or with `UPDATE_CONFIG_DOC=1` rewrites) the part of docs/configuration.md between
/// `<!-- {name} keys begin -->` and `<!-- {name} keys end -->`.
pub fn check_doc(doc: &std::path::Path, name: &str, section: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(doc).map_err(|e| format!("{}: {e}", doc.display()))?;
    let begin = format!("<!-- {name} keys begin -->\n");
    let end = format!("<!-- {name} keys end -->");
    let (Some(b), Some(e)) = (text.find(&begin), text.find(&end)) else {
        return Err(format!("{} lacks the {name} markers", doc.display()));
    };
    let from = b + begin.len();
    if text.get(from..e) == Some(section) {
        return Ok(());
    }
    if std::env::var_os("UPDATE_CONFIG_DOC").is_some() {
        let new = format!(
            "{}{section}{}",
            text.get(..from).unwrap_or_default(),
            text.get(e..).unwrap_or_default()
        );
        return std::fs::write(doc, new).map_err(|e| e.to_string());
    }
    Err(format!(
        "{} is out of date for the {name}: run the tests with UPDATE_CONFIG_DOC=1",
        doc.display()
    ))
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

    #[test]
    fn coverage_names_what_is_missing_stray_or_twice() {
        static TABLE: &[Group] = &[
            (&["a", "b"], Class::Applied),
            (&["b", "mine"], Class::NotUsed("why")),
        ];
        let of = |k: &str| class_in(TABLE, k);
        let apache = listed_keys(&["# Apache 5\na\nb\n\n"]);
        assert_eq!(apache.len(), 2);
        let err = check_coverage(TABLE, of, &apache, &["mine", "other"]).unwrap_err();
        assert!(err.contains("classified twice: [\"b\"]"), "{err}");
        assert!(err.contains("ours without a class: [\"other\"]"), "{err}");
        let more = listed_keys(&["a\nb\nc"]);
        let err = check_coverage(TABLE, of, &more, &["mine"]).unwrap_err();
        assert!(err.contains("no class: [\"c\"]"), "{err}");
        let err = check_coverage(TABLE, of, &apache, &[]).unwrap_err();
        assert!(err.contains("nor ours: [\"mine\"]"), "{err}");
    }
}
