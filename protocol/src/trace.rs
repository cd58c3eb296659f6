//! Message trace records as Apache's Java client writes them into the trace topic (its
//! `TraceDataEncoder`): a trace message's body is one or more records, each ended by
//! FIELD_SPLITOR (char 2), each record's fields separated by CONTENT_SPLITOR (char 1).
//! Decoding never fails as a whole: a record that Apache's decoder would reject is skipped.

/// The trace topic the Java client sends to unless told another (`TopicValidator.RMQ_SYS_TRACE_TOPIC`).
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Separates the fields of one record.
pub const CONTENT_SPLITOR: char = '\u{1}';
/// Ends a record.
pub const FIELD_SPLITOR: char = '\u{2}';

/// What a record traces (Apache's `TraceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceType {
    /// A send, written by the producer's send hook.
    Pub,
    /// A message handed to the consumer's listener.
    SubBefore,
    /// The listener's result.
    SubAfter,
    /// A transactional message's commit or rollback.
    EndTransaction,
    /// A recalled message (RocketMQ 5.3).
    Recall,
}

impl TraceType {
    pub fn name(self) -> &'static str {
        match self {
            TraceType::Pub => "Pub",
            TraceType::SubBefore => "SubBefore",
            TraceType::SubAfter => "SubAfter",
            TraceType::EndTransaction => "EndTransaction",
            TraceType::Recall => "Recall",
        }
    }

    fn parse(s: &str) -> Option<TraceType> {
        Some(match s {
            "Pub" => TraceType::Pub,
            "SubBefore" => TraceType::SubBefore,
            "SubAfter" => TraceType::SubAfter,
            "EndTransaction" => TraceType::EndTransaction,
            "Recall" => TraceType::Recall,
            _ => return None,
        })
    }
}

/// One decoded record: Apache's `TraceContext` with its one `TraceBean`. Fields a record type
/// does not carry keep Apache's defaults (empty text, 0, success true).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    pub trace_type: TraceType,
    /// Milliseconds; `None` where the record has none (an old SubAfter, whose time Apache's
    /// decoder takes as the moment it decodes).
    pub timestamp: Option<i64>,
    pub region_id: String,
    pub group_name: String,
    pub request_id: String,
    pub topic: String,
    pub msg_id: String,
    pub offset_msg_id: String,
    pub tags: String,
    pub keys: String,
    pub store_host: String,
    /// The client's address where a newer client writes it (Pub's 15th field).
    pub client_host: String,
    pub body_length: i32,
    pub cost_time: i32,
    /// `MessageType` ordinal: 0 normal, 1 transaction half, 2 transaction commit, 3 delay.
    pub msg_type: i32,
    pub success: bool,
    pub retry_times: i32,
    pub context_code: i32,
    pub transaction_id: String,
    pub transaction_state: String,
    pub from_transaction_check: bool,
}

impl TraceRecord {
    fn new(trace_type: TraceType) -> TraceRecord {
        TraceRecord {
            trace_type,
            timestamp: None,
            region_id: String::new(),
            group_name: String::new(),
            request_id: String::new(),
            topic: String::new(),
            msg_id: String::new(),
            offset_msg_id: String::new(),
            tags: String::new(),
            keys: String::new(),
            store_host: String::new(),
            client_host: String::new(),
            body_length: 0,
            cost_time: 0,
            msg_type: 0,
            success: true,
            retry_times: 0,
            context_code: 0,
            transaction_id: String::new(),
            transaction_state: String::new(),
            from_transaction_check: false,
        }
    }
}

/// Java's `String.split`: trailing empty parts are dropped.
fn java_split(text: &str, sep: char) -> Vec<&str> {
    let mut parts: Vec<&str> = text.split(sep).collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// Java's `Boolean.parseBoolean`.
fn java_bool(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// Every record of a trace message's body, in order; records Apache's decoder would throw on
/// (too few fields, a number that does not parse, an unknown message type) are left out, and so
/// are unknown record types (as Apache's decoder does).
pub fn decode(body: &[u8]) -> Vec<TraceRecord> {
    let text = String::from_utf8_lossy(body);
    java_split(&text, FIELD_SPLITOR)
        .into_iter()
        .filter_map(|record| decode_record(&java_split(record, CONTENT_SPLITOR)))
        .collect()
}

fn decode_record(f: &[&str]) -> Option<TraceRecord> {
    let text = |i: usize| f.get(i).map(|s| (*s).to_owned());
    let long = |i: usize| f.get(i).and_then(|s| s.parse::<i64>().ok());
    let int = |i: usize| f.get(i).and_then(|s| s.parse::<i32>().ok());
    let mut r = TraceRecord::new(TraceType::parse(f.first()?)?);
    match r.trace_type {
        TraceType::Pub => {
            r.timestamp = Some(long(1)?);
            r.region_id = text(2)?;
            r.group_name = text(3)?;
            r.topic = text(4)?;
            r.msg_id = text(5)?;
            r.tags = text(6)?;
            r.keys = text(7)?;
            r.store_host = text(8)?;
            r.body_length = int(9)?;
            r.cost_time = int(10)?;
            r.msg_type = int(11).filter(|t| (0..=3).contains(t))?;
            if f.len() == 13 {
                r.success = java_bool(f.get(12)?);
            } else if f.len() >= 14 {
                r.offset_msg_id = text(12)?;
                r.success = java_bool(f.get(13)?);
                r.client_host = text(14).unwrap_or_default();
            }
        }
        TraceType::SubBefore => {
            r.timestamp = Some(long(1)?);
            r.region_id = text(2)?;
            r.group_name = text(3)?;
            r.request_id = text(4)?;
            r.msg_id = text(5)?;
            r.retry_times = int(6)?;
            // Empty keys are the record's trailing empty field, which Java's split drops.
            r.keys = text(7).unwrap_or_default();
        }
        TraceType::SubAfter => {
            r.request_id = text(1)?;
            r.msg_id = text(2)?;
            r.cost_time = int(3)?;
            r.success = java_bool(f.get(4)?);
            r.keys = text(5).unwrap_or_default();
            if f.len() >= 7 {
                r.context_code = int(6)?;
            }
            if f.len() >= 9 {
                r.timestamp = Some(long(7)?);
                r.group_name = text(8)?;
            }
        }
        TraceType::EndTransaction => {
            r.timestamp = Some(long(1)?);
            r.region_id = text(2)?;
            r.group_name = text(3)?;
            r.topic = text(4)?;
            r.msg_id = text(5)?;
            r.tags = text(6)?;
            r.keys = text(7)?;
            r.store_host = text(8)?;
            r.msg_type = int(9).filter(|t| (0..=3).contains(t))?;
            r.transaction_id = text(10)?;
            r.transaction_state = text(11).filter(|s| {
                matches!(s.as_str(), "COMMIT_MESSAGE" | "ROLLBACK_MESSAGE" | "UNKNOW")
            })?;
            r.from_transaction_check = java_bool(f.get(12)?);
        }
        TraceType::Recall => {
            r.timestamp = Some(long(1)?);
            r.region_id = text(2)?;
            r.group_name = text(3)?;
            r.topic = text(4)?;
            r.msg_id = text(5)?;
            r.success = java_bool(f.get(6)?);
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields joined as Apache's encoder joins them, the record ended by FIELD_SPLITOR.
    fn rec(fields: &[&str]) -> String {
        let mut s = fields.join("\u{1}");
        s.push(FIELD_SPLITOR);
        s
    }

    #[test]
    fn pub_sub_before_and_sub_after_as_the_4_9_8_client_writes_them() {
        let body = rec(&[
            "Pub",
            "1733500000123",
            "DefaultRegion",
            "pg",
            "TopicTest",
            "7F0000010001ABCD",
            "TagA",
            "k1 k2",
            "127.0.0.1:10911",
            "11",
            "3",
            "0",
            "7F00000100002A9F0000000000000000",
            "true",
        ]) + &rec(&[
            "SubBefore",
            "1733500000200",
            "DefaultRegion",
            "cg",
            "req-1",
            "7F0000010001ABCD",
            "0",
            "k1 k2",
        ]) + &rec(&[
            "SubAfter",
            "req-1",
            "7F0000010001ABCD",
            "5",
            "false",
            "k1 k2",
            "1",
            "1733500000205",
            "cg",
        ]);
        let got = decode(body.as_bytes());
        let [p, b, a] = got.as_slice() else {
            panic!("{got:?}");
        };
        assert_eq!(p.trace_type, TraceType::Pub);
        assert_eq!(p.timestamp, Some(1_733_500_000_123));
        assert_eq!(
            (p.group_name.as_str(), p.topic.as_str()),
            ("pg", "TopicTest")
        );
        assert_eq!(p.msg_id, "7F0000010001ABCD");
        assert_eq!(p.offset_msg_id, "7F00000100002A9F0000000000000000");
        assert_eq!((p.body_length, p.cost_time, p.success), (11, 3, true));
        assert_eq!(p.keys, "k1 k2");
        assert_eq!(b.trace_type, TraceType::SubBefore);
        assert_eq!((b.request_id.as_str(), b.retry_times), ("req-1", 0));
        assert_eq!(a.trace_type, TraceType::SubAfter);
        assert_eq!((a.cost_time, a.success, a.context_code), (5, false, 1));
        assert_eq!(
            (a.timestamp, a.group_name.as_str()),
            (Some(1_733_500_000_205), "cg")
        );
    }

    fn one(body: &str) -> TraceRecord {
        let mut got = decode(body.as_bytes());
        assert_eq!(got.len(), 1, "{got:?}");
        got.remove(0)
    }

    #[test]
    fn older_and_newer_layouts() {
        // 13 fields: no offsetMsgId; 15: a newer client's clientHost.
        let old = rec(&[
            "Pub", "1", "r", "g", "t", "m", "", "", "h", "0", "0", "3", "false",
        ]);
        let p = one(&old);
        assert!(!p.success);
        assert_eq!((p.msg_type, p.offset_msg_id.as_str()), (3, ""));
        let new = rec(&[
            "Pub", "1", "r", "g", "t", "m", "", "", "h", "0", "0", "0", "o", "TRUE", "10.0.0.9",
        ]);
        let p = one(&new);
        assert_eq!((p.success, p.client_host.as_str()), (true, "10.0.0.9"));
        // A SubAfter without time and group (the cloud channel): 7 fields.
        let cloud = rec(&["SubAfter", "q", "m", "2", "true", "", "0"]);
        let a = one(&cloud);
        assert_eq!((a.timestamp, a.group_name.as_str()), (None, ""));
        let end = rec(&[
            "EndTransaction",
            "9",
            "r",
            "g",
            "t",
            "m",
            "",
            "",
            "h",
            "2",
            "tx",
            "COMMIT_MESSAGE",
            "false",
        ]);
        let e = one(&end);
        assert_eq!(e.transaction_state, "COMMIT_MESSAGE");
        assert_eq!(e.msg_type, 2);
    }

    #[test]
    fn bad_records_are_skipped_without_panic() {
        for body in [
            &b""[..],
            b"\x02\x02",
            b"Pub\x01x\x02",
            b"Pub\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x02",
            b"SubAfter\x01a\x02",
            b"SubBefore\x011\x01r\x01g\x01q\x01m\x02",
            b"Nope\x01a\x01b\x02",
            b"\xff\xfe\x01\x02\x00",
            b"EndTransaction\x011\x01r\x01g\x01t\x01m\x01\x01\x01h\x012\x01tx\x01BAD\x01false\x02",
            b"Pub\x011\x01r\x01g\x01t\x01m\x01\x01\x01h\x010\x010\x019\x01true\x02",
        ] {
            assert!(decode(body).is_empty(), "{body:?}");
        }
        let good_after_bad =
            String::from("Pub\x01x\x02") + &rec(&["SubAfter", "q", "m", "2", "true", "k"]);
        assert_eq!(decode(good_after_bad.as_bytes()).len(), 1);
    }
}
