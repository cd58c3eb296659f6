//! Headers of the admin requests Apache's mqadmin sends for broker and name-server operations:
//! VIEW_BROKER_STATS_DATA, QUERY_TOPIC_CONSUME_BY_WHO, GET_PRODUCER_CONNECTION_LIST,
//! DELETE_SUBSCRIPTIONGROUP, GET_BROKER_CONSUME_STATS, WIPE_WRITE_PERM_OF_BROKER and
//! ADD_WRITE_PERM_OF_BROKER.

use super::fields::command_header;

command_header! {
    /// VIEW_BROKER_STATS_DATA (315) request: e.g. `TOPIC_PUT_NUMS` and a topic.
    pub struct ViewBrokerStatsDataRequestHeader {
        stats_name: String = "statsName",
        stats_key: String = "statsKey",
    }
}

command_header! {
    /// QUERY_TOPIC_CONSUME_BY_WHO (300) request.
    pub struct QueryTopicConsumeByWhoRequestHeader {
        topic: String = "topic",
    }
}

command_header! {
    /// GET_PRODUCER_CONNECTION_LIST (204) request.
    pub struct GetProducerConnectionListRequestHeader {
        producer_group: String = "producerGroup",
    }
}

command_header! {
    /// DELETE_SUBSCRIPTIONGROUP (207) request; `removeOffset` also drops the group's offsets.
    pub struct DeleteSubscriptionGroupRequestHeader {
        group_name: String = "groupName",
        remove_offset: Option<bool> = "removeOffset",
    }
}

command_header! {
    /// GET_BROKER_CONSUME_STATS (317) request: `isOrder` keeps only ordered topics.
    pub struct GetConsumeStatsInBrokerHeader {
        is_order: Option<bool> = "isOrder",
    }
}

command_header! {
    /// WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327) request.
    pub struct WritePermOfBrokerRequestHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// WIPE_WRITE_PERM_OF_BROKER (205) response: topics whose queue data changed.
    pub struct WipeWritePermOfBrokerResponseHeader {
        wipe_topic_count: i32 = "wipeTopicCount",
    }
}

command_header! {
    /// ADD_WRITE_PERM_OF_BROKER (327) response: topics whose queue data changed.
    pub struct AddWritePermOfBrokerResponseHeader {
        add_topic_count: i32 = "addTopicCount",
    }
}

command_header! {
    /// CLONE_GROUP_OFFSET (314): copy `srcGroup`'s committed offsets on `topic` (every topic it has
    /// offsets of when blank) to `destGroup`; `offline` skips the check that an online source group
    /// subscribes the topic.
    pub struct CloneGroupOffsetRequestHeader {
        src_group: String = "srcGroup",
        dest_group: String = "destGroup",
        topic: Option<String> = "topic",
        offline: Option<bool> = "offline",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext_fields::ExtFields;
    use crate::header::CommandHeader;

    fn fields(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().copied().collect()
    }

    #[test]
    fn decode_what_mqadmin_sends() {
        let h = ViewBrokerStatsDataRequestHeader::from_ext_fields(&fields(&[
            ("statsName", "GROUP_GET_NUMS"),
            ("statsKey", "T@G"),
        ]))
        .unwrap();
        assert_eq!(
            (h.stats_name.as_str(), h.stats_key.as_str()),
            ("GROUP_GET_NUMS", "T@G")
        );
        let h = DeleteSubscriptionGroupRequestHeader::from_ext_fields(&fields(&[
            ("groupName", "G"),
            ("removeOffset", "false"),
        ]))
        .unwrap();
        assert_eq!(h.remove_offset, Some(false));
        assert!(DeleteSubscriptionGroupRequestHeader::from_ext_fields(&fields(&[])).is_err());
        let h = GetConsumeStatsInBrokerHeader::from_ext_fields(&fields(&[("isOrder", "true")]))
            .unwrap();
        assert_eq!(h.is_order, Some(true));
        let h = WritePermOfBrokerRequestHeader::from_ext_fields(&fields(&[("brokerName", "b")]))
            .unwrap();
        assert_eq!(h.broker_name, "b");
        let out = WipeWritePermOfBrokerResponseHeader {
            wipe_topic_count: 3,
        }
        .to_ext_fields();
        assert_eq!(out.get("wipeTopicCount"), Some("3"));
        let out = AddWritePermOfBrokerResponseHeader { add_topic_count: 2 }.to_ext_fields();
        assert_eq!(out.get("addTopicCount"), Some("2"));
    }
}
