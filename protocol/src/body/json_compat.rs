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
fn skip_string(bytes: &[u8], start: usize) -> usize {
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
