//! A message's properties as its producer sent them plus the broker's edits, read through one index
//! and encoded once: the send path sets `CLUSTER`, and the transaction, retry, timer and delay
//! features set or remove `REAL_TOPIC`, `REAL_QID`, `DELAY`, `TIMER_*`; each of those used to
//! re-encode the whole string (and the next one to parse it again). [`EditedProperties::encode`]
//! gives exactly what the same `properties::with` / `properties::without` calls in the same order
//! would have given.

use std::borrow::Cow;

use super::properties::{self, push};

/// The names the send path reads, found in one pass when the properties are parsed.
const INDEXED: [&str; 11] = [
    properties::DELAY,
    properties::TIMER_DELAY_SEC,
    properties::TIMER_DELAY_MS,
    properties::TIMER_DELIVER_MS,
    properties::TIMER_OUT_MS,
    properties::REAL_TOPIC,
    properties::REAL_QUEUE_ID,
    properties::RETRY_TOPIC,
    properties::KEYS,
    properties::UNIQ_KEY,
    properties::CLUSTER,
];

/// Edits kept inline; one more folds the edits into a new base (not reached by the send path).
const MAX_REMOVED: usize = 10;
const MAX_ADDED: usize = 6;

/// A set value: text, or a number written in place (no `String` of its own).
#[derive(Debug, Clone)]
enum Value<'a> {
    Text(Cow<'a, str>),
    Number { digits: [u8; 20], len: u8 },
}

impl Value<'_> {
    fn number(n: i64) -> Self {
        let mut digits = [0u8; 20];
        let len = {
            let mut rest = digits.as_mut_slice();
            // Any i64 fits in 20 bytes ("-9223372036854775808"), so the write cannot fail.
            let _ = std::io::Write::write_fmt(&mut rest, format_args!("{n}"));
            20 - rest.len()
        };
        Value::Number {
            digits,
            len: u8::try_from(len).unwrap_or(0),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Value::Text(text) => text,
            Value::Number { digits, len } => digits
                .get(..usize::from(*len))
                .and_then(|d| std::str::from_utf8(d).ok())
                .unwrap_or(""),
        }
    }
}

/// The client's properties (the base, borrowed) and the names removed from it and pairs appended.
#[derive(Debug, Clone)]
pub struct EditedProperties<'a> {
    base: Cow<'a, str>,
    /// First value of each [`INDEXED`] name in the base.
    indexed: [Option<(u32, u32)>; INDEXED.len()],
    removed: [&'a str; MAX_REMOVED],
    removed_len: usize,
    added: [(&'a str, Value<'a>); MAX_ADDED],
    added_len: usize,
}

impl<'a> EditedProperties<'a> {
    /// Parses `base` once (the names in [`INDEXED`]); nothing is copied.
    pub fn new(base: &'a str) -> Self {
        let mut out = EditedProperties {
            base: Cow::Borrowed(base),
            indexed: [None; INDEXED.len()],
            removed: [""; MAX_REMOVED],
            removed_len: 0,
            added: std::array::from_fn(|_| ("", Value::Text(Cow::Borrowed("")))),
            added_len: 0,
        };
        out.index();
        out
    }

    fn index(&mut self) {
        self.indexed = [None; INDEXED.len()];
        let base: &str = &self.base;
        let start = base.as_ptr() as usize;
        for (k, v) in properties::iter(base) {
            if let Some(i) = INDEXED.iter().position(|n| *n == k) {
                if let Some(slot) = self.indexed.get_mut(i) {
                    if slot.is_none() {
                        // Offsets into `base`: `v` is a slice of it (at most i16::MAX long in a record,
                        // and a u32 covers any string a request can carry).
                        let from = v.as_ptr() as usize - start;
                        *slot = u32::try_from(from)
                            .ok()
                            .zip(u32::try_from(from + v.len()).ok());
                    }
                }
            }
        }
    }

    fn base_get(&self, key: &str) -> Option<&str> {
        match INDEXED.iter().position(|n| *n == key) {
            Some(i) => {
                let (from, to) = self.indexed.get(i).copied().flatten()?;
                self.base.get(from as usize..to as usize)
            }
            None => properties::get(&self.base, key),
        }
    }

    fn removed(&self) -> &[&'a str] {
        self.removed.get(..self.removed_len).unwrap_or(&[])
    }

    fn added(&self) -> &[(&'a str, Value<'a>)] {
        self.added.get(..self.added_len).unwrap_or(&[])
    }

    /// The value of `key` (the first occurrence, as `properties::get` reads it).
    pub fn get(&self, key: &str) -> Option<&str> {
        if let Some((_, v)) = self.added().iter().find(|(k, _)| *k == key) {
            return Some(v.as_str());
        }
        if self.removed().contains(&key) {
            return None;
        }
        self.base_get(key)
    }

    /// `properties::with`: `key` set to `value`, earlier values removed, appended after the others.
    pub fn set(&mut self, key: &'a str, value: impl Into<Cow<'a, str>>) {
        self.set_value(key, Value::Text(value.into()));
    }

    /// [`Self::set`] with a number's decimal text, written in place (no `String` for it).
    pub fn set_number(&mut self, key: &'a str, value: i64) {
        self.set_value(key, Value::number(value));
    }

    fn set_value(&mut self, key: &'a str, value: Value<'a>) {
        self.remove(key);
        if self.added_len == MAX_ADDED {
            self.fold();
        }
        if let Some(slot) = self.added.get_mut(self.added_len) {
            *slot = (key, value);
            self.added_len += 1;
        }
    }

    /// `properties::without`: every `key` removed.
    pub fn remove(&mut self, key: &'a str) {
        if let Some(i) = self.added().iter().position(|(k, _)| *k == key) {
            // Keys are unique among the added pairs; keep the others' order.
            if let Some(tail) = self.added.get_mut(i..self.added_len) {
                tail.rotate_left(1);
            }
            self.added_len -= 1;
        }
        if self.removed().contains(&key) || !self.has_in_base(key) {
            return;
        }
        if self.removed_len == MAX_REMOVED {
            self.fold();
            // The fold dropped the removed names from the new base; `key` may still be in it.
            if !self.has_in_base(key) {
                return;
            }
        }
        if let Some(slot) = self.removed.get_mut(self.removed_len) {
            *slot = key;
            self.removed_len += 1;
        }
    }

    /// Whether the base has a pair named `key` (the index answers for indexed names).
    fn has_in_base(&self, key: &str) -> bool {
        match INDEXED.iter().position(|n| *n == key) {
            Some(i) => self.indexed.get(i).copied().flatten().is_some(),
            None => properties::iter(&self.base).any(|(k, _)| k == key),
        }
    }

    /// Makes the current text the base (only when the inline edit slots are full).
    fn fold(&mut self) {
        let text = self.encode();
        self.base = Cow::Owned(text);
        self.removed_len = 0;
        self.added_len = 0;
        self.index();
    }

    /// Whether nothing was removed or added (the text is the base's, as the client sent it).
    pub fn is_unchanged(&self) -> bool {
        self.removed_len == 0 && self.added_len == 0 && matches!(self.base, Cow::Borrowed(_))
    }

    /// The length of [`Self::encode`]'s text.
    pub fn encoded_len(&self) -> usize {
        self.pairs().map(|(k, v)| k.len() + v.len() + 2).sum()
    }

    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        let removed = self.removed();
        properties::iter(&self.base)
            .filter(move |(k, _)| !removed.contains(k))
            .chain(self.added().iter().map(|(k, v)| (*k, v.as_str())))
    }

    /// The properties text, in one allocation of its exact length: the base's pairs not removed, in
    /// their order, then the set pairs in the order they were set.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.encoded_len());
        for (k, v) in self.pairs() {
            push(&mut out, k, v);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use properties::{with, without};

    #[test]
    fn numbers_set_in_place_read_and_encode_as_their_text() {
        for n in [0, 7, -1, 17, 1_700_000_000_000, i64::MAX, i64::MIN] {
            let mut by_number = EditedProperties::new("KEYS\u{1}k\u{2}REAL_QID\u{1}9\u{2}");
            by_number.set_number(properties::REAL_QUEUE_ID, n);
            let mut by_text = EditedProperties::new("KEYS\u{1}k\u{2}REAL_QID\u{1}9\u{2}");
            by_text.set(properties::REAL_QUEUE_ID, n.to_string());
            assert_eq!(
                by_number.get(properties::REAL_QUEUE_ID),
                Some(n.to_string().as_str())
            );
            assert_eq!(by_number.encode(), by_text.encode());
            assert_eq!(by_number.encoded_len(), by_text.encoded_len());
        }
    }

    /// One edit, applied both ways.
    #[derive(Clone, Copy, Debug)]
    enum Edit {
        Set(&'static str, &'static str),
        Remove(&'static str),
    }

    fn check(base: &str, edits: &[Edit]) {
        let mut text = base.to_owned();
        let mut edited = EditedProperties::new(base);
        for edit in edits {
            match *edit {
                Edit::Set(k, v) => {
                    text = with(&text, k, v);
                    edited.set(k, v);
                }
                Edit::Remove(k) => {
                    text = without(&text, k);
                    edited.remove(k);
                }
            }
            for name in [
                "DELAY",
                "REAL_TOPIC",
                "CLUSTER",
                "TAGS",
                "X",
                "KEYS",
                "TIMER_OUT_MS",
            ] {
                assert_eq!(
                    edited.get(name),
                    properties::get(&text, name),
                    "{name} after {edits:?} on {base:?}"
                );
            }
        }
        if !edits.is_empty() {
            assert_eq!(edited.encode(), text, "{edits:?} on {base:?}");
            assert_eq!(edited.encoded_len(), text.len());
        }
    }

    #[test]
    fn edits_give_what_with_and_without_give() {
        let bases = [
            "",
            "TAGS\u{1}A\u{2}",
            "TAGS\u{1}A\u{2}DELAY\u{1}3\u{2}KEYS\u{1}k1 k2\u{2}CLUSTER\u{1}c0\u{2}",
            // Duplicates, a pair without separator, no trailing separator.
            "DELAY\u{1}1\u{2}X\u{1}x\u{2}DELAY\u{1}2\u{2}junk\u{2}CLUSTER\u{1}a\u{2}TAGS\u{1}B",
        ];
        use Edit::*;
        let edit_lists: Vec<Vec<Edit>> = vec![
            vec![Set("CLUSTER", "DefaultCluster")],
            vec![
                Set("CLUSTER", "c"),
                Set("REAL_TOPIC", "T"),
                Set("REAL_QID", "1"),
            ],
            vec![Set("CLUSTER", "c"), Remove("DELAY")],
            vec![
                Set("CLUSTER", "c"),
                Set("DELAY", "2"),
                Set("REAL_TOPIC", "T"),
                Set("REAL_QID", "3"),
                Set("REAL_TOPIC", "U"),
            ],
            vec![
                Set("CLUSTER", "c"),
                Remove("TIMER_DELAY_SEC"),
                Remove("TIMER_DELAY_MS"),
                Remove("TIMER_DELIVER_MS"),
                Set("TIMER_OUT_MS", "99"),
                Remove("CLUSTER"),
                Set("X", "y"),
                Remove("X"),
                Set("TAGS", "T2"),
            ],
            // More edits than the inline slots hold.
            vec![
                Set("A1", "1"),
                Set("A2", "2"),
                Set("A3", "3"),
                Set("A4", "4"),
                Set("A5", "5"),
                Set("A6", "6"),
                Set("A7", "7"),
                Remove("A1"),
                Remove("B1"),
                Remove("TAGS"),
                Remove("X"),
                Remove("DELAY"),
                Remove("CLUSTER"),
                Remove("KEYS"),
                Remove("A2"),
                Remove("A3"),
                Remove("A4"),
                Remove("A5"),
                Set("TAGS", "again"),
            ],
        ];
        for base in bases {
            check(base, &[]);
            for edits in &edit_lists {
                check(base, edits);
            }
        }
    }

    #[test]
    fn reads_are_the_first_occurrence_and_unchanged_text_is_the_base() {
        let base = "DELAY\u{1}1\u{2}DELAY\u{1}2\u{2}UNIQ_KEY\u{1}U\u{2}";
        let p = EditedProperties::new(base);
        assert_eq!(p.get("DELAY"), Some("1"));
        assert_eq!(p.get("UNIQ_KEY"), Some("U"));
        assert_eq!(p.get("NONE"), None);
        assert!(p.is_unchanged());
        assert_eq!(p.encode(), base);
    }
}
