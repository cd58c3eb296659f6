//! Lenient HEART_BEAT body parsing: the C++ client (rocketmq 0.4.4's librocketmq) writes numbers as
//! strings (`"subVersion":"1795939831828"`), which the typed body rejects. Such bodies are rewritten
//! (quoted integers of the numeric fields become numbers) and parsed again.

use protocol::body::HeartbeatData;
use serde_json::Value;

/// Fields of a heartbeat that hold numbers.
const NUMERIC_FIELDS: &[&str] = &["subVersion", "codeSet", "heartbeatFingerprint"];

fn unquote_numbers(value: &mut Value, numeric: bool) {
    match value {
        Value::String(s) if numeric => {
            if let Ok(n) = s.trim().parse::<i64>() {
                *value = Value::from(n);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| unquote_numbers(v, numeric)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                unquote_numbers(v, NUMERIC_FIELDS.contains(&key.as_str()));
            }
        }
        _ => {}
    }
}

/// Parses a heartbeat body as the Java client writes it, or as the C++ client does.
pub fn parse_heartbeat(body: &[u8]) -> Result<HeartbeatData, String> {
    let first = match protocol::body::from_json::<HeartbeatData>(body) {
        Ok(data) => return Ok(data),
        Err(e) => e.to_string(),
    };
    let text = String::from_utf8_lossy(body);
    let fixed = protocol::body::quote_integer_keys(&text);
    let mut value: Value = serde_json::from_str(&fixed).map_err(|_| first.clone())?;
    unquote_numbers(&mut value, false);
    serde_json::from_value(value)
        .map_err(|e| format!("{first} (also after unquoting numbers: {e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_client_heartbeat_parses() {
        let body = br#"{"clientID":"545-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"py-push-group","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1795939831828","topic":"%RETRY%py-push-group"},{"subString":"TagA || TagB","subVersion":"17","codeSet":["2598919","2598920"],"topic":"PySync"}]}]}"#;
        let data = parse_heartbeat(body).unwrap();
        let consumer = &data.consumer_data_set[0];
        assert_eq!(consumer.group_name, "py-push-group");
        assert_eq!(
            consumer.subscription_data_set[0].sub_version,
            1_795_939_831_828
        );
        assert_eq!(
            consumer.subscription_data_set[1].code_set,
            vec![2_598_919, 2_598_920]
        );
        // A string where a string belongs is left alone, and real garbage is still an error.
        assert_eq!(consumer.subscription_data_set[1].sub_string, "TagA || TagB");
        assert!(parse_heartbeat(b"{not json").is_err());
        assert!(parse_heartbeat(
            br#"{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"x"}]}]}"#
        )
        .is_err());
    }
}
