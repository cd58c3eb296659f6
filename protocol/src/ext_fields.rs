//! `ExtFields`: a command's string-to-string header fields, stored compactly and in arrival order.
//!
//! Keys and values are ranges of one text: for a received ROCKETMQ header that text is the frame's
//! own bytes (shared, not copied: decoding allocates only the index of ranges), otherwise one `String`
//! they were appended to. Order is kept (encoding is deterministic); a key appears at most once (a
//! later duplicate on the wire replaces the earlier one, like Java's `HashMap.put`). Lookups are
//! linear, which is fastest for the dozen or so fields a header has.

use std::fmt::{self, Write as _};
use std::ops::Range;

use bytes::Bytes;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where one key and its value sit inside the shared text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// [`key_tag`] of the key: lookups compare this word before touching the text.
    tag: u64,
    key_start: usize,
    key_end: usize,
    value_start: usize,
    value_end: usize,
}

impl Entry {
    /// The entry for `key`, which lies at `key_start..` of the text, and the value at `value`.
    fn new(key: &[u8], key_start: usize, value: Range<usize>) -> Entry {
        Entry {
            tag: key_tag(key),
            key_start,
            key_end: key_start + key.len(),
            value_start: value.start,
            value_end: value.end,
        }
    }
}

/// A key's length (low byte) and first 7 bytes in one word: equal tags and equal lengths mean equal
/// keys for keys of up to 7 bytes, which most header names are (all of SEND_MESSAGE_V2's are one
/// letter). Built in a register: assembling bytes in memory and reloading them stalls the CPU.
#[inline]
fn key_tag(key: &[u8]) -> u64 {
    let len = (key.len() & 0xFF) as u64;
    if let [b] = key {
        return len | u64::from(*b) << 8;
    }
    if let Some(word) = key.get(..8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        // Little-endian: byte i lands at bits 8i, then moves up one byte (the eighth drops out).
        return len | u64::from_le_bytes(word) << 8;
    }
    let mut tag = len;
    for (i, b) in key.iter().enumerate() {
        tag |= u64::from(*b) << (8 * (i + 1));
    }
    tag
}

/// The bytes the entries' ranges point into.
#[derive(Clone)]
enum Text {
    /// Keys and values appended here (built by this process, or unescaped from a JSON header).
    Owned(String),
    /// A received ROCKETMQ header, shared with its frame. Between the fields lie binary lengths, so
    /// only the entries' ranges are text: each was checked to be UTF-8 when it was recorded
    /// ([`FrameFieldsBuilder::push`]), and the bytes never change.
    Frame(Bytes),
}

impl Default for Text {
    fn default() -> Self {
        Text::Owned(String::new())
    }
}

impl Text {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Owned(s) => s.as_bytes(),
            Text::Frame(b) => b,
        }
    }

    /// The text of an entry's key or value range ("" for a range that is not one).
    fn str_at(&self, start: usize, end: usize) -> &str {
        match self {
            Text::Owned(s) => s.get(start..end).unwrap_or(""),
            Text::Frame(b) => match b.get(start..end) {
                // SAFETY: only called with the ranges of entries, and every entry of a Frame text was
                // checked to be UTF-8 when recorded (FrameFieldsBuilder::push); Bytes are immutable.
                Some(v) => unsafe { std::str::from_utf8_unchecked(v) },
                None => "",
            },
        }
    }
}

/// Ordered map of header field name to value (see the module docs).
#[derive(Clone, Default)]
pub struct ExtFields {
    text: Text,
    entries: Vec<Entry>,
}

impl ExtFields {
    pub fn new() -> Self {
        ExtFields::default()
    }

    /// Room for `fields` entries whose keys and values total `text_bytes` bytes (in buffers of
    /// earlier fields of this thread when there are: see [`recycle`]).
    pub fn with_capacity(fields: usize, text_bytes: usize) -> Self {
        ExtFields {
            text: Text::Owned(recycle::text(text_bytes)),
            entries: recycle::entries(fields),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn key_of(&self, e: &Entry) -> &str {
        self.text.str_at(e.key_start, e.key_end)
    }

    fn value_of(&self, e: &Entry) -> &str {
        self.text.str_at(e.value_start, e.value_end)
    }

    /// Whether entry `e` has this key (whose [`key_tag`] is `tag`); the text is compared only for
    /// keys longer than the tag holds.
    #[inline]
    fn has_key(&self, e: &Entry, key: &[u8], tag: u64) -> bool {
        e.tag == tag
            && e.key_end - e.key_start == key.len()
            && (key.len() <= 7 || self.text.as_bytes().get(e.key_start..e.key_end) == Some(key))
    }

    fn position(&self, key: &str) -> Option<usize> {
        let tag = key_tag(key.as_bytes());
        self.entries
            .iter()
            .position(|e| self.has_key(e, key.as_bytes(), tag))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        let tag = key_tag(key.as_bytes());
        self.entries
            .iter()
            .find(|e| self.has_key(e, key.as_bytes(), tag))
            .map(|e| self.value_of(e))
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Sets `key` to `value`, replacing an earlier value (which keeps its position).
    pub fn insert(&mut self, key: &str, value: &str) {
        self.insert_with(key, |text| text.push_str(value));
    }

    /// Sets `key` to the `Display` form of `value` without an intermediate `String`.
    pub fn insert_display(&mut self, key: &str, value: impl fmt::Display) {
        // Writing into a String cannot fail.
        self.insert_with(key, |text| {
            let _ = write!(text, "{value}");
        });
    }

    /// Copies the fields out of a frame they share (see [`Text::Frame`]), so that holding them does
    /// not hold the frame's memory.
    pub(crate) fn unshare(&mut self) {
        let _ = self.owned_text();
    }

    /// The fields' text as a `String` that can grow: a frame's shared bytes are copied out first,
    /// field by field (the first edit of a received header).
    fn owned_text(&mut self) -> Option<&mut String> {
        if let Text::Frame(_) = self.text {
            let mut owned = recycle::text(self.text_len() + 64);
            for e in self.entries.iter_mut() {
                let key_start = owned.len();
                owned.push_str(self.text.str_at(e.key_start, e.key_end));
                let key_end = owned.len();
                owned.push_str(self.text.str_at(e.value_start, e.value_end));
                *e = Entry {
                    tag: e.tag,
                    key_start,
                    key_end,
                    value_start: key_end,
                    value_end: owned.len(),
                };
            }
            self.text = Text::Owned(owned);
        }
        match &mut self.text {
            Text::Owned(s) => Some(s),
            Text::Frame(_) => None,
        }
    }

    /// Sets `key` to the text `write_value` appends to the string it is given (a value built in
    /// place, without a `String` of its own).
    pub fn insert_with(&mut self, key: &str, write_value: impl FnOnce(&mut String)) {
        let position = self.position(key);
        let Some(text) = self.owned_text() else {
            return;
        };
        match position {
            Some(i) => {
                // The old value's bytes stay behind as garbage; headers are rebuilt far more often than edited.
                let value_start = text.len();
                write_value(text);
                let value_end = text.len();
                if let Some(e) = self.entries.get_mut(i) {
                    e.value_start = value_start;
                    e.value_end = value_end;
                }
            }
            None => {
                let key_start = text.len();
                text.push_str(key);
                let key_end = text.len();
                write_value(text);
                let value_end = text.len();
                self.entries
                    .push(Entry::new(key.as_bytes(), key_start, key_end..value_end));
            }
        }
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&mut self, key: &str) -> bool {
        match self.position(key) {
            Some(i) => {
                self.entries.remove(i);
                true
            }
            None => false,
        }
    }

    /// Fields in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.entries
            .iter()
            .map(move |e| (self.key_of(e), self.value_of(e)))
    }

    /// Fields in order as raw bytes (for encoders, which need no `str` boundary checks).
    pub(crate) fn iter_bytes(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let text = self.text.as_bytes();
        self.entries.iter().map(move |e| {
            (
                text.get(e.key_start..e.key_end).unwrap_or(&[]),
                text.get(e.value_start..e.value_end).unwrap_or(&[]),
            )
        })
    }

    /// Total bytes of all keys and values (a size hint for encoders).
    pub fn text_len(&self) -> usize {
        self.entries
            .iter()
            .map(|e| (e.key_end - e.key_start) + (e.value_end - e.value_start))
            .sum()
    }

    /// Appends a field without looking for an earlier one with the same key (test helper for
    /// [`ExtFields::finish_decoding`]).
    #[cfg(test)]
    pub(crate) fn push_decoded(&mut self, key: &str, value: &str) {
        let Some(text) = self.owned_text() else {
            return;
        };
        let key_start = text.len();
        text.push_str(key);
        let key_end = text.len();
        text.push_str(value);
        let value_end = text.len();
        self.entries
            .push(Entry::new(key.as_bytes(), key_start, key_end..value_end));
    }

    /// Drops earlier duplicates so the last value on the wire wins, in time linear in the field count.
    pub(crate) fn finish_decoding(&mut self) {
        let n = self.entries.len();
        let mut seen = ahash::AHashSet::with_capacity(n);
        let mut keep = vec![true; n];
        let mut any_dropped = false;
        for (i, e) in self.entries.iter().enumerate().rev() {
            if !seen.insert(self.key_of(e)) {
                if let Some(k) = keep.get_mut(i) {
                    *k = false;
                    any_dropped = true;
                }
            }
        }
        if any_dropped {
            let mut flags = keep.into_iter();
            self.entries.retain(|_| flags.next().unwrap_or(true));
        }
    }
}

impl Drop for ExtFields {
    /// Gives the buffers back to this thread's [`recycle`] lists.
    fn drop(&mut self) {
        recycle::give_entries(std::mem::take(&mut self.entries));
        if let Text::Owned(text) = &mut self.text {
            recycle::give_text(std::mem::take(text));
        }
    }
}

/// Buffers of dropped `ExtFields`, kept per thread for the next ones: a request's index of fields
/// and an answer's fields and text are taken from here and given back when the command is dropped
/// (after the answer is encoded), so a connection's steady flow of requests and answers allocates
/// none of them. A few buffers of bounded size are kept, so the memory held is small and fixed.
mod recycle {
    use std::cell::RefCell;

    use super::Entry;

    /// Buffers kept per kind and thread.
    const KEEP: usize = 16;
    /// Larger buffers are freed rather than kept.
    const MAX_ENTRIES: usize = 32;
    const MAX_TEXT: usize = 1024;

    thread_local! {
        static ENTRIES: RefCell<Vec<Vec<Entry>>> = const { RefCell::new(Vec::new()) };
        static TEXTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// An empty list with room for `capacity` entries.
    pub(super) fn entries(capacity: usize) -> Vec<Entry> {
        let kept = ENTRIES
            .try_with(|kept| kept.try_borrow_mut().ok().and_then(|mut k| k.pop()))
            .ok()
            .flatten();
        match kept {
            Some(mut v) => {
                v.reserve(capacity);
                v
            }
            None => Vec::with_capacity(capacity),
        }
    }

    /// An empty string with room for `capacity` bytes.
    pub(super) fn text(capacity: usize) -> String {
        let kept = TEXTS
            .try_with(|kept| kept.try_borrow_mut().ok().and_then(|mut k| k.pop()))
            .ok()
            .flatten();
        match kept {
            Some(mut s) => {
                s.reserve(capacity);
                s
            }
            None => String::with_capacity(capacity),
        }
    }

    pub(super) fn give_entries(mut v: Vec<Entry>) {
        if v.capacity() == 0 || v.capacity() > MAX_ENTRIES {
            return;
        }
        v.clear();
        // On a thread that is ending (its lists already gone), the buffer is just freed.
        let _ = ENTRIES.try_with(|kept| {
            if let Ok(mut kept) = kept.try_borrow_mut() {
                if kept.len() < KEEP {
                    if kept.capacity() < KEEP {
                        kept.reserve_exact(KEEP);
                    }
                    kept.push(v);
                }
            }
        });
    }

    pub(super) fn give_text(mut s: String) {
        if s.capacity() == 0 || s.capacity() > MAX_TEXT {
            return;
        }
        s.clear();
        let _ = TEXTS.try_with(|kept| {
            if let Ok(mut kept) = kept.try_borrow_mut() {
                if kept.len() < KEEP {
                    if kept.capacity() < KEEP {
                        kept.reserve_exact(KEEP);
                    }
                    kept.push(s);
                }
            }
        });
    }
}

/// Spots possible duplicate keys while fields are decoded, cheaply: one-byte keys exactly, up to 16
/// others by their [`key_tag`] (exact for short keys); a tag match or more keys means "maybe", and
/// only then does [`ExtFields::finish_decoding`] run.
#[derive(Default)]
pub(crate) struct DuplicateCheck {
    /// One-byte keys seen, as a 256-bit set (exact; SEND_MESSAGE_V2's fields are all one letter).
    one_byte: [u64; 4],
    signatures: [u64; DUPLICATE_CHECK_KEYS],
    count: usize,
    maybe: bool,
}

const DUPLICATE_CHECK_KEYS: usize = 16;

impl DuplicateCheck {
    /// Notes a key, whose [`key_tag`] is `tag`.
    pub(crate) fn note(&mut self, key: &[u8], tag: u64) {
        if self.maybe {
            return;
        }
        if let [b] = key {
            let bit = 1u64 << (b & 63);
            if let Some(word) = self.one_byte.get_mut(usize::from(b >> 6)) {
                self.maybe = *word & bit != 0;
                *word |= bit;
            }
            return;
        }
        let seen = self
            .signatures
            .get(..self.count)
            .unwrap_or(&[])
            .contains(&tag);
        match self.signatures.get_mut(self.count) {
            Some(slot) if !seen => {
                *slot = tag;
                self.count += 1;
            }
            _ => self.maybe = true,
        }
    }

    pub(crate) fn maybe_duplicates(&self) -> bool {
        self.maybe
    }
}

/// Collects decoded fields as raw bytes and checks UTF-8 once for all of them at the end, instead
/// of once per key and value.
pub(crate) struct ExtFieldsBuilder {
    raw: Vec<u8>,
    entries: Vec<Entry>,
    duplicates: DuplicateCheck,
}

impl ExtFieldsBuilder {
    pub(crate) fn with_capacity(fields: usize, text_bytes: usize) -> Self {
        ExtFieldsBuilder {
            raw: recycle::text(text_bytes).into_bytes(),
            entries: recycle::entries(fields),
            duplicates: DuplicateCheck::default(),
        }
    }

    /// The text written so far; a decoder that unescapes appends a key or value here, then calls
    /// [`ExtFieldsBuilder::push_written`].
    pub(crate) fn raw_mut(&mut self) -> &mut Vec<u8> {
        &mut self.raw
    }

    /// Records the field whose key is `raw[key_start..key_end]` and whose value runs from
    /// `key_end` to the end of the text written so far.
    pub(crate) fn push_written(&mut self, key_start: usize, key_end: usize) {
        let key = self.raw.get(key_start..key_end).unwrap_or(&[]);
        let entry = Entry::new(key, key_start, key_end..self.raw.len());
        self.duplicates.note(key, entry.tag);
        self.entries.push(entry);
    }

    /// The fields; `None` when the text is not UTF-8 or a key/value edge splits a character (so
    /// that no key or value can be invalid on its own even when the whole text is valid).
    pub(crate) fn finish(self) -> Option<ExtFields> {
        let text = String::from_utf8(self.raw).ok()?;
        let edges_ok = self.entries.iter().all(|e| {
            text.is_char_boundary(e.key_start)
                && text.is_char_boundary(e.key_end)
                && text.is_char_boundary(e.value_start)
                && text.is_char_boundary(e.value_end)
        });
        if !edges_ok {
            return None;
        }
        let mut out = ExtFields {
            text: Text::Owned(text),
            entries: self.entries,
        };
        if self.duplicates.maybe_duplicates() {
            out.finish_decoding();
        }
        Some(out)
    }
}

/// Collects the fields of a received ROCKETMQ header where they lie in its bytes: nothing is
/// copied, and the fields share the frame's memory (see [`Text::Frame`]).
pub(crate) struct FrameFieldsBuilder {
    header: Bytes,
    entries: Vec<Entry>,
    duplicates: DuplicateCheck,
    /// A range of the header found to be all ASCII: fields inside it need no UTF-8 check of their own.
    ascii: Range<usize>,
}

impl FrameFieldsBuilder {
    pub(crate) fn new(header: Bytes, fields: usize) -> Self {
        FrameFieldsBuilder {
            header,
            entries: recycle::entries(fields),
            duplicates: DuplicateCheck::default(),
            ascii: 0..0,
        }
    }

    /// Checks the fields' region in one pass (word at a time): when it is all ASCII, length
    /// prefixes included (values under 128 bytes), fields inside it skip their own checks.
    pub(crate) fn check_ascii(&mut self, region: Range<usize>) {
        if self
            .header
            .get(region.clone())
            .is_some_and(<[u8]>::is_ascii)
        {
            self.ascii = region;
        }
    }

    /// The header's bytes, which the ranges given to [`FrameFieldsBuilder::push`] index.
    pub(crate) fn header(&self) -> &[u8] {
        &self.header
    }

    /// Records the field whose key and value lie at these ranges of the header; false (nothing
    /// recorded) when either is outside it or not UTF-8 on its own.
    pub(crate) fn push(&mut self, key: Range<usize>, value: Range<usize>) -> bool {
        let (Some(k), Some(v)) = (self.header.get(key.clone()), self.header.get(value.clone()))
        else {
            return false;
        };
        let in_ascii = self.ascii.start <= key.start && value.end <= self.ascii.end;
        if !(in_ascii || (is_utf8(k) && is_utf8(v))) {
            return false;
        }
        let entry = Entry::new(k, key.start, value);
        self.duplicates.note(k, entry.tag);
        self.entries.push(entry);
        true
    }

    pub(crate) fn finish(self) -> ExtFields {
        let mut out = ExtFields {
            text: Text::Frame(self.header),
            entries: self.entries,
        };
        if self.duplicates.maybe_duplicates() {
            out.finish_decoding();
        }
        out
    }
}

/// UTF-8 check with a fast path for the usual ASCII field.
fn is_utf8(b: &[u8]) -> bool {
    b.is_ascii() || std::str::from_utf8(b).is_ok()
}

impl PartialEq for ExtFields {
    /// Map equality: the same keys with the same values, in any order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Eq for ExtFields {}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut out = ExtFields::new();
        out.extend(iter);
        out
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Extend<(K, V)> for ExtFields {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.as_ref(), v.as_ref());
        }
    }
}

impl Serialize for ExtFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ExtFields {
    /// Accepts an object whose values are strings, numbers or booleans (stored as their text);
    /// null values are dropped; nested objects/arrays are kept as compact JSON text; a null
    /// object is an empty map.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ExtFieldsVisitor)
    }
}

struct ExtFieldsVisitor;

impl<'de> Visitor<'de> for ExtFieldsVisitor {
    type Value = ExtFields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of header fields")
    }

    fn visit_unit<E: de::Error>(self) -> Result<ExtFields, E> {
        Ok(ExtFields::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<ExtFields, E> {
        Ok(ExtFields::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtFields, A::Error> {
        let fields = map.size_hint().unwrap_or(8).min(64);
        let mut text = String::with_capacity(fields * 24);
        let mut entries = Vec::with_capacity(fields);
        let mut duplicates = DuplicateCheck::default();
        loop {
            let key_start = text.len();
            if map.next_key_seed(AppendStr(&mut text))?.is_none() {
                break;
            }
            let key = text.as_bytes().get(key_start..).unwrap_or(&[]);
            let tag = key_tag(key);
            duplicates.note(key, tag);
            let key_end = text.len();
            if map.next_value_seed(AppendValue(&mut text))? {
                entries.push(Entry {
                    tag,
                    key_start,
                    key_end,
                    value_start: key_end,
                    value_end: text.len(),
                });
            } else {
                // null: drop the key that was already appended.
                text.truncate(key_start);
            }
        }
        let mut out = ExtFields {
            text: Text::Owned(text),
            entries,
        };
        if duplicates.maybe_duplicates() {
            out.finish_decoding();
        }
        Ok(out)
    }
}

/// Appends a JSON string (borrowed or unescaped) to the shared text.
struct AppendStr<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendStr<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for AppendStr<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v);
        Ok(())
    }
}

/// Appends the text form of a field value; returns false for null.
struct AppendValue<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendValue<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AppendValue<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number, boolean or null")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.0.push_str(v);
        Ok(true)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(true)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        let _ = write!(self.0, "{v}");
        Ok(true)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        let _ = write!(self.0, "{v}");
        Ok(true)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        // Debug keeps the ".0" of whole numbers, as Java's Double.toString does.
        let _ = write!(self.0, "{v:?}");
        Ok(true)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        let value = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        self.0.push_str(&value.to_string());
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        let value = serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        self.0.push_str(&value.to_string());
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_fields_lend_their_buffers_to_the_next_empty() {
        let mut f = ExtFields::with_capacity(4, 64);
        f.insert("msgId", "0A00000100002A9F0000000000000000");
        f.insert("queueId", "3");
        let (text_at, entries_at) = match &f.text {
            Text::Owned(s) => (s.as_ptr(), f.entries.as_ptr()),
            Text::Frame(_) => panic!("built fields own their text"),
        };
        drop(f);
        let mut g = ExtFields::with_capacity(2, 16);
        // The same buffers (this thread's lists), emptied: nothing of the dropped fields shows.
        match &g.text {
            Text::Owned(s) => assert_eq!((s.as_ptr(), s.len()), (text_at, 0)),
            Text::Frame(_) => panic!("built fields own their text"),
        }
        assert_eq!(g.entries.as_ptr(), entries_at);
        assert!(g.is_empty());
        assert_eq!(g.get("queueId"), None);
        g.insert("queueId", "7");
        assert_eq!(g.get("queueId"), Some("7"));
        assert_eq!(g.iter().collect::<Vec<_>>(), vec![("queueId", "7")]);
        // Buffers past the size kept are freed, not kept.
        let mut big = ExtFields::with_capacity(64, 4096);
        big.insert("k", "v");
        drop(big);
        let next = ExtFields::with_capacity(0, 0);
        match &next.text {
            Text::Owned(s) => assert!(s.capacity() < 4096),
            Text::Frame(_) => panic!("built fields own their text"),
        }
    }

    #[test]
    fn insert_replace_remove_keep_order() {
        let mut f = ExtFields::new();
        f.insert("a", "1");
        f.insert("b", "2");
        f.insert_display("c", 3i64);
        f.insert("a", "9");
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            vec![("a", "9"), ("b", "2"), ("c", "3")]
        );
        assert!(f.remove("b"));
        assert!(!f.remove("b"));
        assert_eq!(f.get("b"), None);
        assert_eq!(f.len(), 2);
        assert_eq!(f.text_len(), 4);
        f.insert("", "empty key");
        assert_eq!(f.get(""), Some("empty key"));
    }

    #[test]
    fn json_values_of_any_scalar_type_become_strings() {
        let f: ExtFields = serde_json::from_str(
            r#"{"s":"x\u0001y","i":-5,"u":18446744073709551615,"f":1.0,"t":true,"n":null,"o":{"k":[1]},"s":"last"}"#,
        )
        .unwrap();
        assert_eq!(f.get("s"), Some("last"));
        assert_eq!(f.get("i"), Some("-5"));
        assert_eq!(f.get("u"), Some("18446744073709551615"));
        assert_eq!(f.get("f"), Some("1.0"));
        assert_eq!(f.get("t"), Some("true"));
        assert_eq!(f.get("n"), None);
        assert_eq!(f.get("o"), Some(r#"{"k":[1]}"#));
        assert_eq!(f.len(), 6);
        let null: ExtFields = serde_json::from_str("null").unwrap();
        assert!(null.is_empty());
    }

    #[test]
    fn keys_sharing_a_long_prefix_are_not_duplicates() {
        let mut f = ExtFields::new();
        f.push_decoded("consumerA", "1");
        f.push_decoded("consumerB", "2");
        f.push_decoded("consumerA", "3");
        f.finish_decoding();
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            vec![("consumerB", "2"), ("consumerA", "3")]
        );
    }

    #[test]
    fn many_duplicates_dedup_keeps_last() {
        let mut f = ExtFields::new();
        for i in 0..100 {
            f.push_decoded(&format!("k{}", i % 30), &i.to_string());
        }
        f.finish_decoding();
        assert_eq!(f.len(), 30);
        assert_eq!(f.get("k0"), Some("90"));
        assert_eq!(f.get("k29"), Some("89"));
    }

    #[test]
    fn key_tags_hold_length_and_first_seven_bytes() {
        let slow = |key: &[u8]| {
            let mut tag = (key.len() & 0xFF) as u64;
            for (i, b) in key.iter().take(7).enumerate() {
                tag |= u64::from(*b) << (8 * (i + 1));
            }
            tag
        };
        for key in [
            "",
            "a",
            "ab",
            "topic",
            "queueId",
            "queueIds",
            "consumerGroup",
        ] {
            assert_eq!(key_tag(key.as_bytes()), slow(key.as_bytes()), "{key}");
        }
        // Keys sharing 7 bytes and a length differ only in the text, which lookups then compare.
        let mut f = ExtFields::new();
        f.insert("consumerA", "1");
        f.insert("consumerB", "2");
        assert_eq!(f.get("consumerB"), Some("2"));
        assert_eq!(f.get("consumerC"), None);
    }

    #[test]
    fn equality_ignores_order() {
        let a: ExtFields = [("x", "1"), ("y", "2")].into_iter().collect();
        let b: ExtFields = [("y", "2"), ("x", "1")].into_iter().collect();
        let c: ExtFields = [("y", "2"), ("x", "3")].into_iter().collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
