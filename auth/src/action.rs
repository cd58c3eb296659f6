//! What a policy allows or denies on a resource (Apache's `Action`): `Pub`, `Sub`, `Create`, `Update`,
//! `Delete`, `Get`, `List`, and `All` in a policy (every action). A request that asks `Any` is
//! satisfied by any action of the entry.

/// One action (names as Apache writes them; parsed ignoring case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    All,
    Any,
    Pub,
    Sub,
    Create,
    Update,
    Delete,
    Get,
    List,
}

const ALL_ACTIONS: [Action; 9] = [
    Action::All,
    Action::Any,
    Action::Pub,
    Action::Sub,
    Action::Create,
    Action::Update,
    Action::Delete,
    Action::Get,
    Action::List,
];

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::All => "All",
            Action::Any => "Any",
            Action::Pub => "Pub",
            Action::Sub => "Sub",
            Action::Create => "Create",
            Action::Update => "Update",
            Action::Delete => "Delete",
            Action::Get => "Get",
            Action::List => "List",
        }
    }

    pub fn parse(s: &str) -> Result<Action, String> {
        let s = s.trim();
        ALL_ACTIONS
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "the action {s:?} is not valid: write one of Pub, Sub, Create, Update, Delete, \
                     Get, List or All"
                )
            })
    }

    /// Parses a comma-separated list (`Pub,Sub`), as `createAcl -a` takes it.
    pub fn parse_list(s: &str) -> Result<Vec<Action>, String> {
        s.split(',')
            .filter(|a| !a.trim().is_empty())
            .map(Action::parse)
            .collect()
    }
}

/// Whether an entry granting `granted` covers a request asking `asked` (Apache's `isMatchAction`):
/// an entry without actions covers nothing; a request asking `Any` is covered by any action; else
/// one asked action must be granted, or the entry grants `All`.
pub fn covers(granted: &[Action], asked: &[Action]) -> bool {
    if granted.is_empty() {
        return false;
    }
    if asked.contains(&Action::Any) {
        return true;
    }
    asked
        .iter()
        .any(|a| granted.contains(a) || granted.contains(&Action::All))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_coverage() {
        assert_eq!(
            Action::parse_list("pub, Sub").unwrap(),
            [Action::Pub, Action::Sub]
        );
        assert!(Action::parse("Publish").is_err());
        for a in ALL_ACTIONS {
            assert_eq!(Action::parse(a.name()).unwrap(), a);
        }
        assert!(covers(&[Action::Pub], &[Action::Pub]));
        assert!(!covers(&[Action::Pub], &[Action::Sub]));
        assert!(covers(&[Action::All], &[Action::Delete]));
        assert!(covers(&[Action::Get], &[Action::Any]));
        assert!(!covers(&[], &[Action::Any]));
        assert!(covers(&[Action::Sub], &[Action::Pub, Action::Sub]));
    }
}
