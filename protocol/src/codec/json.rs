//! The JSON header: `{"code","extFields","flag","language","opaque","remark","serializeTypeCurrentRPC","version"}`.
//!
//! Decoding is liberal (missing fields default, extFields values may be numbers or booleans, unknown
//! fields are ignored). Encoding writes what the Java client and broker write: fastjson's
//! alphabetical field order, string extFields, `serializeTypeCurrentRPC`, no `remark`/`extFields`
//! when there are none.

use std::fmt;

use bytes::{BufMut, Bytes};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

use super::text::{put_i64, put_json_str, put_json_text};
use crate::command::{RemotingCommand, SerializeType};
use crate::ext_fields::ExtFields;
use crate::language::LanguageCode;

#[derive(Deserialize)]
struct JsonHeader {
    #[serde(default)]
    code: i32,
    #[serde(default, deserialize_with = "language")]
    language: LanguageCode,
    #[serde(default)]
    version: i32,
    #[serde(default)]
    opaque: i32,
    #[serde(default)]
    flag: i32,
    #[serde(default)]
    remark: Option<String>,
    #[serde(default, rename = "extFields")]
    ext_fields: ExtFields,
}

/// Accepts a language name, a byte code, or null (JAVA).
fn language<'de, D: Deserializer<'de>>(d: D) -> Result<LanguageCode, D::Error> {
    struct LanguageVisitor;
    impl Visitor<'_> for LanguageVisitor {
        type Value = LanguageCode;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a language name")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<LanguageCode, E> {
            Ok(LanguageCode::from_name(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<LanguageCode, E> {
            Ok(LanguageCode::from_json_number(i128::from(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<LanguageCode, E> {
            Ok(LanguageCode::from_json_number(i128::from(v)))
        }
        fn visit_unit<E: de::Error>(self) -> Result<LanguageCode, E> {
            Ok(LanguageCode::Java)
        }
    }
    d.deserialize_any(LanguageVisitor)
}

/// Decodes a JSON header; the body and serialize type come from the frame. The usual shape is read
/// in one pass by [`super::json_reader`]; anything else goes through serde_json.
pub fn decode(header: &[u8], body: Bytes) -> Result<RemotingCommand, serde_json::Error> {
    match super::json_reader::read(header, body.clone()) {
        Some(cmd) => Ok(cmd),
        None => decode_with_serde(header, body),
    }
}

/// Decodes a JSON header with serde_json alone: the reader for unusual shapes, and the reference
/// the one-pass reader is checked against (tests, fuzzing).
pub fn decode_with_serde(header: &[u8], body: Bytes) -> Result<RemotingCommand, serde_json::Error> {
    // One UTF-8 check for the whole header; serde_json then skips its per-string checks.
    let text = std::str::from_utf8(header)
        .map_err(|_| <serde_json::Error as de::Error>::custom("JSON header is not valid UTF-8"))?;
    let h: JsonHeader = serde_json::from_str(text)?;
    Ok(RemotingCommand {
        code: h.code,
        language: h.language,
        version: h.version,
        opaque: h.opaque,
        flag: h.flag,
        remark: h.remark,
        ext_fields: h.ext_fields,
        body,
        body_tail: Vec::new(),
        serialize_type: SerializeType::Json,
    })
}

/// Appends the JSON header of `cmd`.
pub fn encode(cmd: &RemotingCommand, out: &mut impl BufMut) {
    out.put_slice(b"{\"code\":");
    put_i64(out, i64::from(cmd.code));
    if !cmd.ext_fields.is_empty() {
        out.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in cmd.ext_fields.iter_bytes().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            put_json_text(out, k);
            out.put_u8(b':');
            put_json_text(out, v);
        }
        out.put_u8(b'}');
    }
    out.put_slice(b",\"flag\":");
    put_i64(out, i64::from(cmd.flag));
    out.put_slice(b",\"language\":");
    put_json_str(out, cmd.language.name());
    out.put_slice(b",\"opaque\":");
    put_i64(out, i64::from(cmd.opaque));
    if let Some(remark) = &cmd.remark {
        out.put_slice(b",\"remark\":");
        put_json_str(out, remark);
    }
    out.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_i64(out, i64::from(cmd.version));
    out.put_u8(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::json_reader::read;

    /// The reader accepts `text` and agrees with serde_json on every field.
    fn agrees(text: &str) -> RemotingCommand {
        let fast =
            read(text.as_bytes(), Bytes::new()).unwrap_or_else(|| panic!("fast path: {text}"));
        assert_eq!(
            decode_with_serde(text.as_bytes(), Bytes::new()).unwrap(),
            fast,
            "{text}"
        );
        fast
    }

    #[test]
    fn what_clients_send_is_read_in_one_pass() {
        // Java 4.9.8 (alphabetical, serializeTypeCurrentRPC, \u0001 separators escaped).
        let java = r#"{"code":310,"extFields":{"a":"pg","b":"TopicTest","c":"TBW102","d":"4","e":"2","f":"0","g":"1700000000000","h":"0","i":"KEYS\u0001k\u0002TAGS\u0001TagA\u0002","j":"0","k":"false","m":"false","n":"broker-a"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}"#;
        let cmd = agrees(java);
        assert_eq!(cmd.code, 310);
        assert_eq!(cmd.opaque, 7);
        assert_eq!(cmd.ext("i"), Some("KEYS\u{1}k\u{2}TAGS\u{1}TagA\u{2}"));
        // C++ 0.4.4: other order, no serializeTypeCurrentRPC, booleans as numbers, spaces.
        let cpp = "{ \"code\" : 310, \"language\" : \"CPP\", \"version\" : 395, \"opaque\" : 3, \"flag\" : 0, \"remark\" : \"\", \"extFields\" : { \"b\" : \"T\", \"m\" : 1, \"d\" : -4 } }\n";
        let cmd = agrees(cpp);
        assert_eq!(cmd.language, LanguageCode::Cpp);
        assert_eq!(cmd.remark.as_deref(), Some(""));
        assert_eq!(cmd.ext("m"), Some("1"));
        assert_eq!(cmd.ext("d"), Some("-4"));
        // Unicode raw and escaped (a surrogate pair), escaped quotes, nulls, unknown fields.
        let odd = r#"{"extFields":{"tópico":"中文\ud83d\ude00\"\\\/\b\f\n\r\t","gone":null,"t":true,"f":false,"k":"1","k":"2"},"remark":null,"language":12,"x":"y","y":null,"z":-5}"#;
        let cmd = agrees(odd);
        assert_eq!(cmd.ext("tópico"), Some("中文😀\"\\/\u{8}\u{c}\n\r\t"));
        assert_eq!(cmd.ext("gone"), None);
        assert_eq!(cmd.ext("k"), Some("2"));
        assert_eq!(cmd.language, LanguageCode::Rust);
        let longest = agrees(r#"{"extFields":{"a":999999999999999999,"b":-999999999999999999}}"#);
        assert_eq!(longest.ext("a"), Some("999999999999999999"));
        assert_eq!(longest.ext("b"), Some("-999999999999999999"));
        agrees("{}");
        agrees(r#"{"extFields":null,"language":null}"#);
        agrees(r#"{"extFields":{},"remark":"r\u00e9"}"#);
    }

    #[test]
    fn other_shapes_are_left_to_serde() {
        for text in [
            r#"{"code":1.0}"#,
            r#"{"code":1e3}"#,
            r#"{"code":01}"#,
            r#"{"code":-0}"#,
            r#"{"code":2147483648}"#,
            r#"{"code":"1"}"#,
            r#"{"code":1,"code":2}"#,
            r#"{"extFields":{"a":{"b":1}}}"#,
            r#"{"extFields":{"a":[1]}}"#,
            r#"{"extFields":{"a":1.5}}"#,
            r#"{"extFields":{"a":12345678901234567890}}"#,
            // Found by the fuzzer: 19 nines overflowed an i64 while being read.
            r#"{"extFields":{"a":9999999999999999999}}"#,
            r#"{"code":-9999999999999999999}"#,
            r#"{"extFields":{"a":"\ud800"}}"#,
            r#"{"extFields":{"a":"\udc00"}}"#,
            r#"{"extFields":{"a":"\x"}}"#,
            "{\"extFields\":{\"a\":\"\u{1}\"}}",
            r#"{"x":{}}"#,
            r#"{"co\u0064e":1}"#,
            r#"{"code":1,}"#,
            r#"{"code":1} x"#,
            r#"{"code":1"#,
            r#"{"extFields":{"a":tru}}"#,
            "",
            "[]",
        ] {
            assert!(read(text.as_bytes(), Bytes::new()).is_none(), "{text}");
        }
        // Invalid UTF-8 is refused wherever it is, kept or skipped.
        for bytes in [
            &b"{\"extFields\":{\"a\":\"\xC3\"}}"[..],
            b"{\"extFields\":{\"\xFF\":\"v\"}}",
            b"{\"language\":\"\xC3\"}",
            b"{\"remark\":\"\xC3\"}",
            b"{\"x\":\"\xC3\"}",
            b"{\"\xC3\":1}",
            // Found by the fuzzer: a dropped (null) field's key is checked too.
            b"{\"extFields\":{\"\xC3\":null}}",
        ] {
            assert!(read(bytes, Bytes::new()).is_none(), "{bytes:?}");
            assert!(decode_with_serde(bytes, Bytes::new()).is_err(), "{bytes:?}");
        }
    }
}
