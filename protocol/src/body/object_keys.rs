//! fastjson writes maps keyed by objects (`Map<MessageQueue, _>`) with the object itself as the key:
//! `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}}`. That is not JSON; these
//! helpers write such maps and turn them into standard JSON (each object key becomes a string
//! holding the object's JSON) so serde can read them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use super::consumer::MessageQueue;
use super::json_body::{from_json, BodyError};
use super::json_compat::skip_string;

/// Returns `text` with every object-valued key replaced by a JSON string of its text; borrowed
/// when there is none. Strings are skipped (escapes honoured); malformed input is left as it is.
pub fn quote_object_keys(text: &str) -> Cow<'_, str> {
    /// What encloses the current position; for objects, whether a key comes next.
    enum Ctx {
        Object { key_next: bool },
        Array,
    }
    let bytes = text.as_bytes();
    let mut stack: Vec<Ctx> = Vec::new();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let key_next = matches!(stack.last(), Some(Ctx::Object { key_next: true }));
        match b {
            b'"' => {
                i = skip_string(bytes, i);
                if let Some(Ctx::Object { key_next }) = stack.last_mut() {
                    *key_next = false;
                }
                continue;
            }
            b'{' if key_next => {
                let Some(end) = matching_brace(bytes, i) else {
                    break;
                };
                let key = text.get(i..end).unwrap_or("");
                let buf = out.get_or_insert_with(|| String::with_capacity(text.len() + 64));
                buf.push_str(text.get(copied..i).unwrap_or(""));
                // A string always serializes.
                buf.push_str(&serde_json::to_string(key).unwrap_or_default());
                copied = end;
                if let Some(Ctx::Object { key_next }) = stack.last_mut() {
                    *key_next = false;
                }
                i = end;
                continue;
            }
            b'{' => stack.push(Ctx::Object { key_next: true }),
            b'[' => stack.push(Ctx::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Ctx::Object { key_next }) = stack.last_mut() {
                    *key_next = true;
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' | b':' => {}
            _ => {
                // A bare key (e.g. an integer) ends the key position too.
                if let Some(Ctx::Object { key_next }) = stack.last_mut() {
                    *key_next = false;
                }
            }
        }
        i += 1;
    }
    match out {
        Some(mut buf) => {
            buf.push_str(text.get(copied..).unwrap_or(""));
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(text),
    }
}

/// Index just past the `}` closing the object that starts at `start`.
fn matching_brace(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                i = skip_string(bytes, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A MessageQueue as fastjson writes it (fields in alphabetical order).
pub fn message_queue_json(mq: &MessageQueue) -> String {
    format!(
        "{{\"brokerName\":{},\"queueId\":{},\"topic\":{}}}",
        serde_json::to_string(&mq.broker_name).unwrap_or_default(),
        mq.queue_id,
        serde_json::to_string(&mq.topic).unwrap_or_default()
    )
}

/// Writes a `Map<MessageQueue, V>` the way fastjson does (object keys).
pub fn write_queue_map<V: Serialize>(out: &mut String, map: &BTreeMap<MessageQueue, V>) {
    out.push('{');
    for (n, (mq, value)) in map.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&message_queue_json(mq));
        out.push(':');
        out.push_str(&serde_json::to_string(value).unwrap_or_else(|_| "null".into()));
    }
    out.push('}');
}

/// Turns a map read with string keys (see [`quote_object_keys`]) into one keyed by MessageQueue.
pub fn queue_keys<V>(map: BTreeMap<String, V>) -> Result<BTreeMap<MessageQueue, V>, BodyError> {
    map.into_iter()
        .map(|(key, v)| {
            serde_json::from_str::<MessageQueue>(&key)
                .map(|mq| (mq, v))
                .map_err(|e| BodyError(format!("bad MessageQueue key {key:?}: {e}")))
        })
        .collect()
}

/// Parses a body whose maps may be keyed by objects (fastjson) or by strings.
pub fn from_fastjson<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, BodyError> {
    let text = std::str::from_utf8(body).map_err(|e| BodyError(e.to_string()))?;
    let fixed = quote_object_keys(text);
    from_json(fixed.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_become_strings() {
        let java = r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"x":1},{"brokerName":"b","queueId":1,"topic":"T"}:{"x":[{"a":2}]}},"tps":0.0}"#;
        let fixed = quote_object_keys(java);
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        let table = v["offsetTable"].as_object().unwrap();
        assert_eq!(table.len(), 2);
        assert_eq!(
            table[r#"{"brokerName":"b","queueId":1,"topic":"T"}"#]["x"][0]["a"],
            2
        );
        assert_eq!(v["tps"], 0.0);
    }

    #[test]
    fn standard_json_and_odd_input_are_left_alone() {
        for text in [
            r#"{"a":[{"b":1},{"c":"{d}"}],"e":{"f":{}}}"#,
            r#"{"k\"{":1}"#,
            "{{",
            "{{\"a\":1",
            "}}]]{",
            "",
        ] {
            assert!(
                matches!(quote_object_keys(text), Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn keys_with_braces_in_strings_survive() {
        let text = r#"{{"brokerName":"b}","queueId":3,"topic":"{T"}:5}"#;
        let map: BTreeMap<String, i64> = serde_json::from_str(&quote_object_keys(text)).unwrap();
        let map = queue_keys(map).unwrap();
        let (mq, v) = map.iter().next().unwrap();
        assert_eq!(
            (mq.broker_name.as_str(), mq.queue_id, mq.topic.as_str(), *v),
            ("b}", 3, "{T", 5)
        );
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use crate::body::{ConsumeStats, OffsetWrapper};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_panics_and_standard_json_is_untouched(text in ".{0,200}") {
            let out = quote_object_keys(&text);
            if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
                prop_assert!(matches!(out, Cow::Borrowed(_)));
            }
        }

        #[test]
        fn any_names_round_trip(
            queues in proptest::collection::vec((".{0,12}", ".{0,12}", any::<i32>(), any::<i64>()), 0..6)
        ) {
            let mut stats = ConsumeStats::default();
            for (topic, broker_name, queue_id, offset) in queues {
                stats.offset_table.insert(
                    MessageQueue { topic, broker_name, queue_id },
                    OffsetWrapper { broker_offset: offset, ..OffsetWrapper::default() },
                );
            }
            prop_assert_eq!(ConsumeStats::from_json(&stats.to_json()).unwrap(), stats);
        }
    }
}
