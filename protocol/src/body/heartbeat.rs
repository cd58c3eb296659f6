//! HEART_BEAT body: HeartbeatData with its ProducerData, ConsumerData and SubscriptionData.

use serde::{Deserialize, Serialize};

use super::java_enum::java_enum;
use super::json_compat::lenient_number;

java_enum! {
    /// Pull or push consumer (`ConsumeType`).
    ConsumeType {
        ConsumeActively = "CONSUME_ACTIVELY",
        ConsumePassively = "CONSUME_PASSIVELY",
        ConsumePop = "CONSUME_POP",
    }
}

java_enum! {
    /// Clustering (queues shared by the group) or broadcasting (`MessageModel`).
    MessageModel {
        Broadcasting = "BROADCASTING",
        Clustering = "CLUSTERING",
    }
}

java_enum! {
    /// Where a new consumer group starts (`ConsumeFromWhere`).
    ConsumeFromWhere {
        ConsumeFromLastOffset = "CONSUME_FROM_LAST_OFFSET",
        ConsumeFromLastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        ConsumeFromMinOffset = "CONSUME_FROM_MIN_OFFSET",
        ConsumeFromMaxOffset = "CONSUME_FROM_MAX_OFFSET",
        ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        ConsumeFromTimestamp = "CONSUME_FROM_TIMESTAMP",
    }
}

/// The tag or SQL expression "subscribe everything".
pub const SUB_ALL: &str = "*";

fn default_expression_type() -> String {
    "TAG".to_owned()
}

/// One topic subscription of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    #[serde(default)]
    pub class_filter_mode: bool,
    #[serde(default)]
    pub topic: String,
    /// The expression as written ("TagA || TagB", "*", or SQL92).
    #[serde(default)]
    pub sub_string: String,
    #[serde(default)]
    pub tags_set: Vec<String>,
    /// Java `String.hashCode()` of each tag, matched against ConsumeQueue tagsCodes.
    #[serde(default, deserialize_with = "lenient_number::vec_i32")]
    pub code_set: Vec<i32>,
    #[serde(default, deserialize_with = "lenient_number::i64")]
    pub sub_version: i64,
    /// "TAG" or "SQL92".
    #[serde(default = "default_expression_type")]
    pub expression_type: String,
}

impl Default for SubscriptionData {
    fn default() -> Self {
        SubscriptionData {
            class_filter_mode: false,
            topic: String::new(),
            sub_string: SUB_ALL.to_owned(),
            tags_set: Vec::new(),
            code_set: Vec::new(),
            sub_version: 0,
            expression_type: default_expression_type(),
        }
    }
}

/// A producer group a client belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    #[serde(default)]
    pub group_name: String,
}

/// A consumer group a client belongs to, with its subscriptions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    #[serde(default)]
    pub group_name: String,
    #[serde(default = "default_consume_type")]
    pub consume_type: ConsumeType,
    #[serde(default = "default_message_model")]
    pub message_model: MessageModel,
    #[serde(default = "default_consume_from_where")]
    pub consume_from_where: ConsumeFromWhere,
    #[serde(default)]
    pub subscription_data_set: Vec<SubscriptionData>,
    #[serde(default)]
    pub unit_mode: bool,
}

// Java's client defaults, used when a client leaves a field out.
fn default_consume_type() -> ConsumeType {
    ConsumeType::ConsumePassively
}

fn default_message_model() -> MessageModel {
    MessageModel::Clustering
}

fn default_consume_from_where() -> ConsumeFromWhere {
    ConsumeFromWhere::ConsumeFromLastOffset
}

impl Default for ConsumerData {
    fn default() -> Self {
        ConsumerData {
            group_name: String::new(),
            consume_type: default_consume_type(),
            message_model: default_message_model(),
            consume_from_where: default_consume_from_where(),
            subscription_data_set: Vec::new(),
            unit_mode: false,
        }
    }
}

/// HEART_BEAT body: who the client is and which groups it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatData {
    #[serde(rename = "clientID", default)]
    pub client_id: String,
    #[serde(default)]
    pub producer_data_set: Vec<ProducerData>,
    #[serde(default)]
    pub consumer_data_set: Vec<ConsumerData>,
    #[serde(default, deserialize_with = "lenient_number::i32")]
    pub heartbeat_fingerprint: i32,
    /// fastjson names the `isWithoutSub` field after its getter: "withoutSub".
    #[serde(default, alias = "isWithoutSub")]
    pub without_sub: bool,
}

/// CHECK_CLIENT_CONFIG body: a consumer asks whether the broker can filter by one of its
/// subscriptions (Java's `CheckClientRequestBody`, sent for every subscription that is not TAG).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CheckClientRequestBody {
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub subscription_data: Option<SubscriptionData>,
}

#[cfg(test)]
mod java_client_tests {
    use super::*;

    #[test]
    fn check_client_body_as_fastjson_writes_it() {
        // The field order and shape of the 4.9.8 Java client's body (fastjson sorts the fields).
        let body = br#"{"clientId":"127.0.0.1@4242#1","group":"sql-group","subscriptionData":{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 5 AND b = 'x'","subVersion":1700000000123,"tagsSet":[],"topic":"SqlTopic"}}"#;
        let data: CheckClientRequestBody = crate::body::from_json(body).unwrap();
        assert_eq!(data.client_id, "127.0.0.1@4242#1");
        assert_eq!(data.group, "sql-group");
        let sub = data.subscription_data.unwrap();
        assert_eq!(sub.expression_type, "SQL92");
        assert_eq!(sub.sub_string, "a > 5 AND b = 'x'");
        assert_eq!(sub.topic, "SqlTopic");
        assert_eq!(sub.sub_version, 1_700_000_000_123);
        let none: CheckClientRequestBody =
            crate::body::from_json(br#"{"clientId":"c","group":"g"}"#).unwrap();
        assert_eq!(none.subscription_data, None);
    }
}

#[cfg(test)]
mod cpp_client_tests {
    use super::*;

    #[test]
    fn numbers_written_as_strings_parse() {
        // As rocketmq 0.4.4's C++ client writes a heartbeat.
        let body = br#"{"clientID":"545-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"py-push-group","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1795939831828","topic":"%RETRY%py-push-group"},{"subString":"TagA || TagB","subVersion":17,"codeSet":["2598919",2598920],"topic":"PySync"}]}]}"#;
        let data: HeartbeatData = crate::body::from_json(body).unwrap();
        let subs = &data.consumer_data_set[0].subscription_data_set;
        assert_eq!(subs[0].sub_version, 1_795_939_831_828);
        assert_eq!(subs[1].sub_version, 17);
        assert_eq!(subs[1].code_set, vec![2_598_919, 2_598_920]);
        assert_eq!(subs[1].sub_string, "TagA || TagB");
        let bad = br#"{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"x"}]}]}"#;
        assert!(crate::body::from_json::<HeartbeatData>(bad).is_err());
        let too_big =
            br#"{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["99999999999"]}]}]}"#;
        assert!(crate::body::from_json::<HeartbeatData>(too_big).is_err());
    }
}
