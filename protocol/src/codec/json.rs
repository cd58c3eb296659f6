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

use super::text::{put_i64, put_json_str};
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

/// A language sent as a number; one JSON cannot name is OTHER (so it survives re-encoding).
pub(crate) fn from_number(v: i128) -> LanguageCode {
    match u8::try_from(v).map(LanguageCode::from_code) {
        Ok(LanguageCode::UnknownCode(_)) | Err(_) => LanguageCode::Other,
        Ok(known) => known,
    }
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
            Ok(from_number(i128::from(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<LanguageCode, E> {
            Ok(from_number(i128::from(v)))
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
        serialize_type: SerializeType::Json,
    })
}

/// Appends the JSON header of `cmd`.
pub fn encode(cmd: &RemotingCommand, out: &mut impl BufMut) {
    out.put_slice(b"{\"code\":");
    put_i64(out, i64::from(cmd.code));
    if !cmd.ext_fields.is_empty() {
        out.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in cmd.ext_fields.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            put_json_str(out, k);
            out.put_u8(b':');
            put_json_str(out, v);
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
