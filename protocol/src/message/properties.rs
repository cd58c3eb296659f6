//! The message properties string (`key\u{1}value\u{2}` pairs) and the property names RocketMQ uses.

/// Separates a property's name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends each name/value pair.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

pub const KEYS: &str = "KEYS";
pub const TAGS: &str = "TAGS";
/// The client-generated message id users see as "msgId".
pub const UNIQ_KEY: &str = "UNIQ_KEY";
pub const WAIT: &str = "WAIT";
pub const DELAY: &str = "DELAY";
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
pub const REAL_TOPIC: &str = "REAL_TOPIC";
pub const REAL_QUEUE_ID: &str = "REAL_QID";
pub const TRANSACTION_PREPARED: &str = "TRAN_MSG";
pub const PRODUCER_GROUP: &str = "PGROUP";
pub const MIN_OFFSET: &str = "MIN_OFFSET";
pub const MAX_OFFSET: &str = "MAX_OFFSET";
pub const BUYER_ID: &str = "BUYER_ID";
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
pub const TRANSFER_FLAG: &str = "TRANSFER_FLAG";
pub const CORRECTION_FLAG: &str = "CORRECTION_FLAG";
pub const MQ2_FLAG: &str = "MQ2_FLAG";
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
pub const MSG_REGION: &str = "MSG_REGION";
pub const TRACE_SWITCH: &str = "TRACE_ON";
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
pub const CONSUME_START_TIMESTAMP: &str = "CONSUME_START_TIME";
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
/// The cluster of the broker that stored the message (set by the broker; request-reply uses it).
pub const CLUSTER: &str = "CLUSTER";
/// Request-reply: the requester's client id, where the broker pushes the reply.
pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// Request-reply: ties a reply to its request.
pub const CORRELATION_ID: &str = "CORRELATION_ID";
/// Request-reply: how long the requester waits, in ms.
pub const MESSAGE_TTL: &str = "TTL";
/// Request-reply: `reply` on a reply message (`MixAll.REPLY_MESSAGE_FLAG`).
pub const MESSAGE_TYPE: &str = "MSG_TYPE";
/// Request-reply: when the broker pushed the reply (ms).
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
pub const INSTANCE_ID: &str = "INSTANCE_ID";
pub const SHARDING_KEY: &str = "__SHARDINGKEY";
/// RocketMQ 5 timer messages: deliver at this unix time in ms.
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
/// RocketMQ 5 timer messages: deliver after this many seconds.
pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
/// RocketMQ 5 timer messages: deliver after this many ms.
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
/// RocketMQ 5 timer messages: the due time of a parked message, absolute ms.
pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
/// POP: the receipt handle (`extraInfo`) of a popped message.
pub const POP_CK: &str = "POP_CK";
/// POP: when the message was first popped (ms), kept across retries.
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";

/// Separates several keys inside the KEYS property.
pub const KEY_SEPARATOR: char = ' ';

/// Iterates the `(name, value)` pairs of a properties string without allocating.
/// A pair without a name/value separator is skipped, as RocketMQ's decoder does.
pub fn iter(props: &str) -> impl Iterator<Item = (&str, &str)> {
    props
        .split(PROPERTY_SEPARATOR)
        .filter_map(|pair| pair.split_once(NAME_VALUE_SEPARATOR))
}

/// Looks one property up without allocating; the first occurrence wins.
pub fn get<'a>(props: &'a str, key: &str) -> Option<&'a str> {
    iter(props).find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// Decodes a properties string into owned pairs, in order.
pub fn parse(props: &str) -> Vec<(String, String)> {
    iter(props)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Encodes pairs into a properties string (each pair terminated by `\u{2}`, as the Java client does).
pub fn encode<K: AsRef<str>, V: AsRef<str>>(pairs: impl IntoIterator<Item = (K, V)>) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        push(&mut out, k.as_ref(), v.as_ref());
    }
    out
}

/// Appends one pair to an encoded properties string.
pub fn push(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push(NAME_VALUE_SEPARATOR);
    out.push_str(value);
    out.push(PROPERTY_SEPARATOR);
}

/// Returns the string with `key` set to `value` (replacing an earlier value, keeping the others).
pub fn with(props: &str, key: &str, value: &str) -> String {
    let mut out = String::with_capacity(props.len() + key.len() + value.len() + 2);
    for (k, v) in iter(props).filter(|(k, _)| *k != key) {
        push(&mut out, k, v);
    }
    push(&mut out, key, value);
    out
}

/// Returns the string without `key`.
pub fn without(props: &str, key: &str) -> String {
    encode(iter(props).filter(|(k, _)| *k != key))
}

/// The individual keys of the KEYS property (space separated, empty parts skipped).
pub fn keys(props: &str) -> impl Iterator<Item = &str> {
    get(props, KEYS)
        .unwrap_or("")
        .split(KEY_SEPARATOR)
        .filter(|k| !k.is_empty())
}

/// Java's `String.hashCode()` over UTF-16 code units: the tagsCode stored in ConsumeQueue entries and
/// computed by clients for their subscriptions, so both sides must agree bit for bit.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The tagsCode of a message with these tags (0 when there are none, as RocketMQ stores it).
pub fn tags_code(tags: &str) -> i64 {
    if tags.is_empty() {
        0
    } else {
        i64::from(java_string_hash(tags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_and_parse_follow_the_wire_format() {
        let props = "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}UNIQ_KEY\u{1}AC11\u{2}";
        assert_eq!(get(props, TAGS), Some("TagA"));
        assert_eq!(get(props, UNIQ_KEY), Some("AC11"));
        assert_eq!(get(props, DELAY), None);
        assert_eq!(keys(props).collect::<Vec<_>>(), vec!["k1", "k2"]);
        assert_eq!(parse(props).len(), 3);
        assert_eq!(encode(parse(props)), props);
    }

    #[test]
    fn a_trailing_pair_without_separator_still_parses() {
        // Some clients omit the final \u{2}.
        assert_eq!(get("A\u{1}1\u{2}B\u{1}2", "B"), Some("2"));
        assert_eq!(get("garbage", "garbage"), None);
    }

    #[test]
    fn with_replaces_and_without_removes() {
        let p = encode([("A", "1"), ("B", "2")]);
        let p2 = with(&p, "A", "9");
        assert_eq!(get(&p2, "A"), Some("9"));
        assert_eq!(get(&p2, "B"), Some("2"));
        assert_eq!(get(&without(&p2, "A"), "A"), None);
    }

    #[test]
    fn java_hash_matches_known_values() {
        // Values of "TagA".hashCode() etc. computed by hand from s[0]*31^(n-1) + ... + s[n-1].
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("ab"), 97 * 31 + 98);
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        // Overflow wraps like Java's int arithmetic: "hello world".hashCode() == 1794106052.
        assert_eq!(java_string_hash("hello world"), 1_794_106_052);
        // Non-BMP characters count as two UTF-16 units.
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    }
}
