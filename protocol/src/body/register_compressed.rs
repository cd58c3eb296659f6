//! The compressed REGISTER_BROKER body (header `compressed=true`, broker setting `compressedRegister`).
//!
//! Layout (Apache RocketMQ `RegisterBrokerBody.encode(true)`), all inside one `java.util.zip.Deflater`
//! stream (zlib framing), integers big-endian i32:
//! - data version: length, then `DataVersion` JSON;
//! - topic count, then per topic: length, then `TopicConfig.encode()` text:
//!   `name readQueueNums writeQueueNums perm topicFilterType [attributes JSON]` (space separated;
//!   topicSysFlag and order are not carried);
//! - filter server list: length, then a JSON array of strings;
//! - RocketMQ 5 brokers only: mapping count, then per mapping: length, then `TopicQueueMappingInfo` JSON.
//!   4.x bodies end after the filter server list (Java's name server decides by the broker's
//!   version; the end of the data tells the same).
//!
//! rocketmq-rust brokers write the same layout as a raw deflate stream (no zlib header); that is
//! accepted too.

use std::collections::BTreeMap;

use flate2::{Decompress, FlushDecompress, Status};

use super::json_body::{from_json, BodyError};
use super::register::{DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper};

/// Most bytes a compressed body may inflate to (about a million topics); a larger (or hostile,
/// "zip bomb") body is refused rather than allocated.
pub const MAX_INFLATED_REGISTER_BODY: usize = 64 * 1024 * 1024;

fn error(what: impl std::fmt::Display) -> BodyError {
    BodyError(format!("compressed register broker body: {what}"))
}

/// Decodes a `compressed=true` REGISTER_BROKER body.
pub fn decode_compressed_register_body(body: &[u8]) -> Result<RegisterBrokerBody, BodyError> {
    decode_compressed_register_body_limited(body, MAX_INFLATED_REGISTER_BODY)
}

/// [`decode_compressed_register_body`] with an explicit inflated-size limit.
pub fn decode_compressed_register_body_limited(
    body: &[u8],
    max_inflated: usize,
) -> Result<RegisterBrokerBody, BodyError> {
    let plain = inflate_java_or_raw(body, max_inflated)?;
    let mut reader = FrameReader {
        rest: plain.as_slice(),
    };

    let data_version: DataVersion = from_json(reader.entry("data version")?)
        .map_err(|e| error(format_args!("data version: {}", e.0)))?;

    let topic_count = reader.count("topic count")?;
    let mut topic_config_table = BTreeMap::new();
    for index in 0..topic_count {
        let text = reader.entry("topic config")?;
        let tc = decode_topic_config_text(text)
            .map_err(|why| error(format_args!("topic config {index}: {why}")))?;
        topic_config_table.insert(tc.topic_name.clone(), tc);
    }

    // Java logs and keeps an empty list when this JSON does not parse; so do we.
    let filter_json = reader.entry("filter server list")?;
    let filter_server_list = from_json::<Option<Vec<String>>>(filter_json)
        .ok()
        .flatten()
        .unwrap_or_default();

    let topic_queue_mapping_info_map = if reader.rest.is_empty() {
        None
    } else {
        let mapping_count = reader.count("topic queue mapping count")?;
        let mut mappings = serde_json::Map::new();
        for index in 0..mapping_count {
            let info: serde_json::Value = from_json(reader.entry("topic queue mapping")?)
                .map_err(|e| error(format_args!("topic queue mapping {index}: {}", e.0)))?;
            let Some(topic) = info
                .get("topic")
                .and_then(|t| t.as_str())
                .map(str::to_owned)
            else {
                return Err(error(format_args!(
                    "topic queue mapping {index} has no topic"
                )));
            };
            mappings.insert(topic, info);
        }
        Some(serde_json::Value::Object(mappings))
    };

    Ok(RegisterBrokerBody {
        filter_server_list,
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
            data_version,
            mapping_data_version: None,
            topic_config_table,
            topic_queue_mapping_detail_map: None,
            topic_queue_mapping_info_map,
        },
    })
}

impl RegisterBrokerBody {
    /// Reads a REGISTER_BROKER body: JSON, or the compressed binary form when the request header
    /// says `compressed=true`. An empty body is a registration without topics (as in Java).
    ///
    /// RocketMQ 5 brokers with `compressedRegister=true` deflate the body yet send
    /// `compressed=false` (BrokerOuterAPI always sets false since 5.0); Java's name server then
    /// fails on it. A "JSON" body that is not JSON but starts with a zlib header is read as
    /// compressed instead (JSON starts with `{`, zlib with 0x78: no ambiguity).
    pub fn decode(body: &[u8], compressed: bool) -> Result<Self, BodyError> {
        if body.is_empty() {
            Ok(RegisterBrokerBody::default())
        } else if compressed {
            decode_compressed_register_body(body)
        } else {
            match from_json(body) {
                Ok(decoded) => Ok(decoded),
                Err(json_error) if has_zlib_header(body) => {
                    decode_compressed_register_body(body).map_err(|_| json_error)
                }
                Err(json_error) => Err(json_error),
            }
        }
    }
}

/// Parses `TopicConfig.encode()` text as Java's `TopicConfig.decode` does: split on single spaces
/// (trailing empty parts dropped), at least five parts, attributes JSON optional and ignored when
/// it does not parse (Java's rule: attribute values with spaces cannot survive this format).
pub fn decode_topic_config_text(bytes: &[u8]) -> Result<TopicConfig, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut parts: Vec<&str> = text.split(' ').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    let [name, read, write, perm, filter, rest @ ..] = parts.as_slice() else {
        return Err(format!(
            "\"{text}\" has {} fields, expected at least 5",
            parts.len()
        ));
    };
    if name.is_empty() {
        return Err(format!("\"{text}\" has no topic name"));
    }
    let number = |field: &str, value: &str| {
        value
            .parse::<i32>()
            .map_err(|_| format!("{field} \"{value}\" is not an integer"))
    };
    if !matches!(*filter, "SINGLE_TAG" | "MULTI_TAG") {
        return Err(format!("unknown topicFilterType \"{filter}\""));
    }
    let attributes = rest
        .first()
        .and_then(|json| from_json::<BTreeMap<String, String>>(json.as_bytes()).ok())
        .unwrap_or_default();
    Ok(TopicConfig {
        attributes,
        perm: number("perm", perm)?,
        read_queue_nums: number("readQueueNums", read)?,
        topic_filter_type: (*filter).to_owned(),
        topic_name: (*name).to_owned(),
        write_queue_nums: number("writeQueueNums", write)?,
        ..TopicConfig::default()
    })
}

/// Whether `body` starts with a zlib header (RFC 1950: deflate method, header checksum).
fn has_zlib_header(body: &[u8]) -> bool {
    match body {
        [cmf, flg, ..] => {
            cmf & 0x0F == 8 && cmf >> 4 <= 7 && u16::from_be_bytes([*cmf, *flg]) % 31 == 0
        }
        _ => false,
    }
}

/// Inflates Java's zlib stream; falls back to a raw deflate stream (rocketmq-rust brokers).
fn inflate_java_or_raw(body: &[u8], max_inflated: usize) -> Result<Vec<u8>, BodyError> {
    if has_zlib_header(body) {
        match inflate(body, true, max_inflated) {
            Ok(plain) => Ok(plain),
            Err(zlib_error) => inflate(body, false, max_inflated).map_err(|_| zlib_error),
        }
    } else {
        inflate(body, false, max_inflated)
    }
}

/// Inflates one whole stream; a stream that ends early, is corrupt, or inflates past
/// `max_inflated` is an error (bytes after the stream's end are ignored, as Java does).
fn inflate(body: &[u8], zlib: bool, max_inflated: usize) -> Result<Vec<u8>, BodyError> {
    let too_big = || error(format_args!("inflates to more than {max_inflated} bytes"));
    let mut inflater = Decompress::new(zlib);
    // Start near the expected size and grow by doubling: a hostile body reserves little up front.
    let first = body.len().saturating_mul(4).clamp(4096, 1024 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(first.min(max_inflated.saturating_add(1)));
    loop {
        if out.len() == out.capacity() {
            if out.len() > max_inflated {
                return Err(too_big());
            }
            // One byte past the limit is enough to tell "too big" apart from "exactly the limit".
            let grow = out
                .len()
                .max(4096)
                .min(max_inflated.saturating_add(1).saturating_sub(out.len()))
                .max(1);
            out.reserve_exact(grow);
        }
        let consumed = usize::try_from(inflater.total_in()).unwrap_or(usize::MAX);
        let input = body.get(consumed..).unwrap_or(&[]);
        let produced_before = out.len();
        let status = inflater
            .decompress_vec(input, &mut out, FlushDecompress::None)
            .map_err(|e| error(format_args!("not a valid deflate stream ({e})")))?;
        if out.len() > max_inflated {
            return Err(too_big());
        }
        if status == Status::StreamEnd {
            return Ok(out);
        }
        let consumed_now = usize::try_from(inflater.total_in()).unwrap_or(usize::MAX);
        let room_left = out.len() < out.capacity();
        let all_input_used = consumed_now >= body.len();
        let progressed = consumed_now != consumed || out.len() != produced_before;
        // Room to write yet no end: the input ran out (or the inflater stalled).
        if room_left && (all_input_used || !progressed) {
            return Err(error(format_args!(
                "the deflate stream ends early ({} bytes, {} inflated so far)",
                body.len(),
                out.len()
            )));
        }
    }
}

/// Reads RocketMQ's length-prefixed frames from the inflated bytes.
struct FrameReader<'a> {
    rest: &'a [u8],
}

impl<'a> FrameReader<'a> {
    fn int(&mut self, what: &str) -> Result<i32, BodyError> {
        match self.rest {
            [a, b, c, d, rest @ ..] => {
                self.rest = rest;
                Ok(i32::from_be_bytes([*a, *b, *c, *d]))
            }
            _ => Err(error(format_args!("truncated before the {what}"))),
        }
    }

    /// A non-negative count; nothing is allocated from it (each item must still be present).
    fn count(&mut self, what: &str) -> Result<usize, BodyError> {
        let n = self.int(what)?;
        usize::try_from(n).map_err(|_| error(format_args!("negative {what} {n}")))
    }

    /// A length-prefixed entry.
    fn entry(&mut self, what: &str) -> Result<&'a [u8], BodyError> {
        let len = self.count(&format!("{what} length"))?;
        if len > self.rest.len() {
            return Err(error(format_args!(
                "{what} length {len} exceeds the {} bytes left",
                self.rest.len()
            )));
        }
        let (entry, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_config_text_follows_javas_decode() {
        let tc =
            decode_topic_config_text(br#"T1 8 4 6 MULTI_TAG {"+message.type":"FIFO"}"#).unwrap();
        assert_eq!(tc.topic_name, "T1");
        assert_eq!(
            (tc.read_queue_nums, tc.write_queue_nums, tc.perm),
            (8, 4, 6)
        );
        assert_eq!(tc.topic_filter_type, "MULTI_TAG");
        assert_eq!(
            tc.attributes.get("+message.type").map(String::as_str),
            Some("FIFO")
        );
        // 4.x form: no attributes, no trailing separator.
        let old = decode_topic_config_text(b"T2 1 1 2 SINGLE_TAG").unwrap();
        assert_eq!((old.topic_name.as_str(), old.perm), ("T2", 2));
        assert!(old.attributes.is_empty());
        // Attributes with a space do not survive (Java ignores them); the topic does.
        let spaced = decode_topic_config_text(br#"T3 1 1 6 SINGLE_TAG {"a":"b c"}"#).unwrap();
        assert!(spaced.attributes.is_empty());
        for bad in [
            &b"T 1 1 6"[..],
            b"T x 1 6 SINGLE_TAG {}",
            b"T 1  1 6 SINGLE_TAG",
            b"T 1 1 6 TAGS {}",
            b" 1 1 6 SINGLE_TAG",
            b"",
        ] {
            assert!(decode_topic_config_text(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn zlib_header_detection() {
        assert!(has_zlib_header(&[0x78, 0xDA]));
        assert!(has_zlib_header(&[0x78, 0x9C]));
        assert!(!has_zlib_header(&[0x78, 0x00]));
        assert!(!has_zlib_header(&[0x78]));
        assert!(!has_zlib_header(&[]));
    }
}
