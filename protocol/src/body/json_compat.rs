//! Rewrites fastjson's non-standard unquoted integer object keys (`{0:"a",1:"b"}`) into quoted ones.

use std::borrow::Cow;

/// Returns `text` with every object key that is a bare integer quoted; borrowed when nothing changed.
/// Strings are skipped (escapes honoured), so digits inside values are never touched. A bare
/// integer counts as a key only right after `{` or `,` and right before `:`.
pub fn quote_integer_keys(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already copied into `out`
    let mut i = 0;
    // Whether the last significant byte was `{` or `,` (a key may follow).
    let mut key_may_follow = false;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                i = skip_string(bytes, i);
                key_may_follow = false;
            }
            b'{' | b',' => {
                key_may_follow = true;
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'-' | b'0'..=b'9' if key_may_follow => {
                let start = i;
                i += 1;
                while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
                let end = i;
                let mut j = i;
                while matches!(bytes.get(j), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                    j += 1;
                }
                if bytes.get(j) == Some(&b':') {
                    let buf = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
                    buf.push_str(text.get(copied..start).unwrap_or(""));
                    buf.push('"');
                    buf.push_str(text.get(start..end).unwrap_or(""));
                    buf.push('"');
                    copied = end;
                }
                key_may_follow = false;
            }
            _ => {
                key_may_follow = false;
                i += 1;
            }
        }
    }
    match out {
        Some(mut buf) => {
            buf.push_str(text.get(copied..).unwrap_or(""));
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(text),
    }
}

/// Index just past the string starting at `start` (a `"`), or the end of input if unterminated.
pub(super) fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_bare_integer_keys() {
        assert_eq!(
            quote_integer_keys(
                r#"{"brokerAddrs":{0:"127.0.0.1:10911", 1 :"h:2"},"n":[1,2],"s":"{3:4}"}"#
            ),
            r#"{"brokerAddrs":{"0":"127.0.0.1:10911", "1" :"h:2"},"n":[1,2],"s":"{3:4}"}"#
        );
        assert_eq!(
            quote_integer_keys(r#"{"t@g":{-1:5,12:7}}"#),
            r#"{"t@g":{"-1":5,"12":7}}"#
        );
        assert!(matches!(
            quote_integer_keys(r#"{"a":"\"{0:1}","b":[0,1]}"#),
            Cow::Borrowed(_)
        ));
        // Numbers in value position after a comma inside an object stay untouched.
        assert_eq!(quote_integer_keys(r#"{"a":1,"b":2}"#), r#"{"a":1,"b":2}"#);
        // Unterminated and odd input does not panic.
        assert_eq!(quote_integer_keys("{\"abc\\"), "{\"abc\\");
        assert_eq!(quote_integer_keys("{-"), "{-");
    }
}

/// Serde adapters for numbers some clients write as JSON strings (the C++ client writes
/// `"subVersion":"1795939831828"` and `"codeSet":["2598919"]`).
pub mod lenient_number {
    use serde::de::{Deserializer, Error};
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText {
        Number(i64),
        Text(String),
    }

    fn to_i64<E: Error>(v: NumberOrText) -> Result<i64, E> {
        match v {
            NumberOrText::Number(n) => Ok(n),
            NumberOrText::Text(s) => s
                .trim()
                .parse()
                .map_err(|_| E::custom(format!("expected a number, got \"{s}\""))),
        }
    }

    /// An i64 written as a number or a string of digits.
    pub fn i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        to_i64(NumberOrText::deserialize(d)?)
    }

    /// An i32 written as a number or a string of digits.
    pub fn i32<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        let n = to_i64(NumberOrText::deserialize(d)?)?;
        std::primitive::i32::try_from(n)
            .map_err(|_| D::Error::custom(format!("{n} is out of i32 range")))
    }

    /// A list of i32, each written as a number or a string of digits.
    pub fn vec_i32<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i32>, D::Error> {
        Vec::<NumberOrText>::deserialize(d)?
            .into_iter()
            .map(|v| {
                let n = to_i64(v)?;
                std::primitive::i32::try_from(n)
                    .map_err(|_| D::Error::custom(format!("{n} is out of i32 range")))
            })
            .collect()
    }
}
