//! A one-pass reader for the JSON header shape clients send: a flat object of numbers and strings
//! whose `extFields` is a flat object of strings, numbers, booleans and nulls.
//!
//! It writes extFields keys and values straight into one buffer (no `serde_json::Value`, no
//! per-field `String`) and allocates nothing else for a header like the Java client's. Anything
//! outside that shape (fractions and exponents, nested objects, lone surrogates, a repeated known
//! field, malformed bytes) makes it return `None`, and `json::decode` hands the header to
//! serde_json, which decides and words the error. So this reader only has to be right about what
//! it accepts: the `json_header` fuzz target checks it against serde_json on every input.
//!
//! The header is not checked for UTF-8 up front: what is kept is checked once (the extFields text
//! as a whole, the language and remark), and what is skipped (unknown names and their string
//! values) is checked where it is skipped, so invalid UTF-8 anywhere still means `None`.

use bytes::Bytes;

use super::text::find_escape;
use crate::command::{RemotingCommand, SerializeType};
use crate::ext_fields::ExtFieldsBuilder;
use crate::language::LanguageCode;

/// Reads a JSON header; `None` when it is not in the simple shape or not UTF-8.
pub(crate) fn read(text: &[u8], body: Bytes) -> Option<RemotingCommand> {
    let mut r = Reader { buf: text, pos: 0 };
    let mut cmd = RemotingCommand {
        code: 0,
        language: LanguageCode::Java,
        version: 0,
        opaque: 0,
        flag: 0,
        remark: None,
        ext_fields: Default::default(),
        body,
        body_tail: Vec::new(),
        serialize_type: SerializeType::Json,
    };
    // serde's derived reader refuses a known field given twice; leave those to it.
    let mut seen = 0u8;
    r.skip_ws();
    r.eat(b'{')?;
    r.skip_ws();
    if r.peek()? == b'}' {
        r.pos += 1;
    } else {
        loop {
            let key = r.plain_string()?;
            r.skip_ws();
            r.eat(b':')?;
            r.skip_ws();
            let bit = match key {
                b"code" => {
                    cmd.code = r.i32()?;
                    1
                }
                b"version" => {
                    cmd.version = r.i32()?;
                    2
                }
                b"opaque" => {
                    cmd.opaque = r.i32()?;
                    4
                }
                b"flag" => {
                    cmd.flag = r.i32()?;
                    8
                }
                b"language" => {
                    cmd.language = r.language()?;
                    16
                }
                b"remark" => {
                    cmd.remark = r.remark()?;
                    32
                }
                b"extFields" => {
                    cmd.ext_fields = r.ext_fields()?;
                    64
                }
                _ => {
                    std::str::from_utf8(key).ok()?;
                    r.skip_scalar()?;
                    0
                }
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            r.skip_ws();
            match r.next()? {
                b',' => r.skip_ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    r.skip_ws();
    (r.pos == r.buf.len()).then_some(cmd)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// What a field value turned out to be.
enum Value {
    /// Appended to the output text.
    Written,
    Null,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn eat_word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos.checked_add(word.len())?;
        (self.buf.get(self.pos..end)? == word).then(|| self.pos = end)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    /// A string without escapes, borrowed (`None` on an escape: rare enough to leave to serde).
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.pos;
        let rest = self.buf.get(start..)?;
        let len = find_escape(rest)?;
        if rest.get(len) != Some(&b'"') {
            return None;
        }
        self.pos = start + len + 1;
        rest.get(..len)
    }

    /// Appends the unescaped contents of a string to `out`, copying runs without escapes whole.
    fn string_into(&mut self, out: &mut Vec<u8>) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let rest = self.buf.get(self.pos..)?;
            let run = find_escape(rest)?;
            out.extend_from_slice(rest.get(..run)?);
            self.pos += run;
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => self.escape(out)?,
                _ => return None,
            }
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let c = match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                // ASCII (the \u0001 and \u0002 of message properties): one byte, no char encoding.
                if let Ok(ascii @ 0..=0x7F) = u8::try_from(first) {
                    out.push(ascii);
                    return Some(());
                }
                if (0xD800..0xDC00).contains(&first) {
                    self.eat_word(b"\\u")?;
                    let second = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&second) {
                        return None;
                    }
                    char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))?
                } else {
                    // A lone trailing surrogate is no char: None.
                    char::from_u32(first)?
                }
            }
            _ => return None,
        };
        let mut utf8 = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        Some(())
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            v = v * 16 + char::from(self.next()?).to_digit(16)?;
        }
        Some(v)
    }

    /// An integer of at most 18 digits, no fraction or exponent, and its text (which is also how
    /// serde_json would print it: `-0` and leading zeros are left to serde).
    fn integer(&mut self) -> Option<(i64, &'a [u8])> {
        let start = self.pos;
        let negative = self.peek()? == b'-';
        if negative {
            self.pos += 1;
        }
        let digits_start = self.pos;
        let mut v: i64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            // Checked before the digit is added: 18 digits always fit an i64, 19 may not.
            if self.pos - digits_start == 18 {
                return None;
            }
            v = v * 10 + i64::from(d - b'0');
            self.pos += 1;
        }
        let digits = self.buf.get(digits_start..self.pos)?;
        match digits {
            [] => return None,
            [b'0', ..] if digits.len() > 1 || negative => return None,
            _ => {}
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some((
            if negative { -v } else { v },
            self.buf.get(start..self.pos)?,
        ))
    }

    fn i32(&mut self) -> Option<i32> {
        i32::try_from(self.integer()?.0).ok()
    }

    /// A language name, a byte code, or null (JAVA), as the serde reader takes them.
    fn language(&mut self) -> Option<LanguageCode> {
        match self.peek()? {
            b'"' => Some(LanguageCode::from_name(
                std::str::from_utf8(self.plain_string()?).ok()?,
            )),
            b'n' => self.eat_word(b"null").map(|()| LanguageCode::Java),
            _ => Some(LanguageCode::from_json_number(i128::from(
                self.integer()?.0,
            ))),
        }
    }

    fn remark(&mut self) -> Option<Option<String>> {
        if self.peek()? == b'n' {
            return self.eat_word(b"null").map(|()| None);
        }
        let mut text = Vec::new();
        self.string_into(&mut text)?;
        String::from_utf8(text).ok().map(Some)
    }

    /// The extFields object (or null), written into one buffer sized by the header.
    fn ext_fields(&mut self) -> Option<crate::ext_fields::ExtFields> {
        if self.peek()? == b'n' {
            self.eat_word(b"null")?;
            return Some(Default::default());
        }
        self.eat(b'{')?;
        let remaining = self.buf.len() - self.pos;
        let mut fields = ExtFieldsBuilder::with_capacity(16, remaining);
        self.skip_ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return fields.finish();
        }
        loop {
            let key_start = fields.raw_mut().len();
            self.string_into(fields.raw_mut())?;
            let key_end = fields.raw_mut().len();
            self.skip_ws();
            self.eat(b':')?;
            self.skip_ws();
            match self.field_value(fields.raw_mut())? {
                Value::Written => fields.push_written(key_start, key_end),
                Value::Null => {
                    // The key is dropped, so the check of the kept text would not see it.
                    let key = fields.raw_mut().get(key_start..key_end).unwrap_or(&[]);
                    std::str::from_utf8(key).ok()?;
                    fields.raw_mut().truncate(key_start);
                }
            }
            self.skip_ws();
            match self.next()? {
                b',' => self.skip_ws(),
                b'}' => return fields.finish(),
                _ => return None,
            }
        }
    }

    /// An extFields value as text: a string's contents, an integer's digits, `true`/`false`.
    fn field_value(&mut self, out: &mut Vec<u8>) -> Option<Value> {
        match self.peek()? {
            b'"' => self.string_into(out).map(|()| Value::Written),
            b't' => {
                self.eat_word(b"true")?;
                out.extend_from_slice(b"true");
                Some(Value::Written)
            }
            b'f' => {
                self.eat_word(b"false")?;
                out.extend_from_slice(b"false");
                Some(Value::Written)
            }
            b'n' => self.eat_word(b"null").map(|()| Value::Null),
            _ => {
                out.extend_from_slice(self.integer()?.1);
                Some(Value::Written)
            }
        }
    }

    /// Skips the value of a field this reader does not keep (`serializeTypeCurrentRPC` and others).
    fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => std::str::from_utf8(self.plain_string()?).ok().map(|_| ()),
            b't' => self.eat_word(b"true"),
            b'f' => self.eat_word(b"false"),
            b'n' => self.eat_word(b"null"),
            _ => self.integer().map(|_| ()),
        }
    }
}
