//! Property tests: every typed header survives extFields -> struct -> extFields unchanged, and a
//! missing required field is reported by name. Values are generated from each header's field list.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;

use proptest::prelude::*;
use protocol::header::*;
use protocol::ExtFields;

fn value(kind: FieldKind) -> BoxedStrategy<String> {
    match kind {
        FieldKind::Str => any::<String>().boxed(),
        FieldKind::I32 => any::<i32>().prop_map(|v| v.to_string()).boxed(),
        FieldKind::I64 => any::<i64>().prop_map(|v| v.to_string()).boxed(),
        FieldKind::Bool => any::<bool>().prop_map(|v| v.to_string()).boxed(),
    }
}

/// Wire values for every field of a header: required ones always present, optional ones sometimes.
fn wire_fields(
    fields: &'static [HeaderField],
) -> Vec<BoxedStrategy<(&'static str, Option<String>)>> {
    fields
        .iter()
        .map(|f| {
            let name = f.name;
            if f.required {
                value(f.kind).prop_map(move |v| (name, Some(v))).boxed()
            } else {
                proptest::option::of(value(f.kind))
                    .prop_map(move |v| (name, v))
                    .boxed()
            }
        })
        .collect()
}

fn to_ext(values: &[(&str, Option<String>)]) -> ExtFields {
    values
        .iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (*k, v)))
        .collect()
}

fn round_trip<H: CommandHeader + PartialEq + Debug>(
    values: &[(&'static str, Option<String>)],
) -> Result<(), TestCaseError> {
    let fields = to_ext(values);
    let header = H::from_ext_fields(&fields).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let written = header.to_ext_fields();
    prop_assert_eq!(&written, &fields);
    prop_assert_eq!(
        H::from_ext_fields(&written).map_err(|e| TestCaseError::fail(e.to_string()))?,
        header
    );
    // Unmodelled fields (like the ones RpcRequestHeader adds) are ignored on the way in.
    let mut extra = fields.clone();
    extra.insert("zzUnknownField", "x");
    prop_assert!(H::from_ext_fields(&extra).is_ok());
    for f in H::FIELDS.iter().filter(|f| f.required) {
        let mut missing = fields.clone();
        missing.remove(f.name);
        prop_assert_eq!(
            H::from_ext_fields(&missing),
            Err(HeaderError::Missing(f.name))
        );
    }
    Ok(())
}

macro_rules! header_round_trips {
    ($($test:ident: $header:ty,)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn $test(values in wire_fields(<$header as CommandHeader>::FIELDS)) {
                round_trip::<$header>(&values)?;
            }
        }
    )*};
}

header_round_trips! {
    send_v1: SendMessageRequestHeader,
    send_v2: SendMessageRequestHeaderV2,
    send_response: SendMessageResponseHeader,
    pull_request: PullMessageRequestHeader,
    pull_response: PullMessageResponseHeader,
    query_consumer_offset: QueryConsumerOffsetRequestHeader,
    query_consumer_offset_response: QueryConsumerOffsetResponseHeader,
    update_consumer_offset: UpdateConsumerOffsetRequestHeader,
    get_max_offset: GetMaxOffsetRequestHeader,
    get_max_offset_response: GetMaxOffsetResponseHeader,
    get_min_offset: GetMinOffsetRequestHeader,
    get_min_offset_response: GetMinOffsetResponseHeader,
    earliest_store_time: GetEarliestMsgStoretimeRequestHeader,
    earliest_store_time_response: GetEarliestMsgStoretimeResponseHeader,
    search_offset: SearchOffsetRequestHeader,
    search_offset_response: SearchOffsetResponseHeader,
    consumer_list: GetConsumerListByGroupRequestHeader,
    notify_ids_changed: NotifyConsumerIdsChangedRequestHeader,
    unregister_client: UnregisterClientRequestHeader,
    send_back: ConsumerSendMsgBackRequestHeader,
    lock_batch: LockBatchMqRequestHeader,
    view_message: ViewMessageRequestHeader,
    query_message: QueryMessageRequestHeader,
    query_message_response: QueryMessageResponseHeader,
    end_transaction: EndTransactionRequestHeader,
    check_transaction: CheckTransactionStateRequestHeader,
    register_broker: RegisterBrokerRequestHeader,
    register_broker_response: RegisterBrokerResponseHeader,
    unregister_broker: UnregisterBrokerRequestHeader,
    query_data_version: QueryDataVersionRequestHeader,
    query_data_version_response: QueryDataVersionResponseHeader,
    route_info: GetRouteInfoRequestHeader,
    create_topic: CreateTopicRequestHeader,
    delete_topic: DeleteTopicRequestHeader,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The long and short send headers convert into each other without loss.
    #[test]
    fn send_v1_v2_conversion(values in wire_fields(SendMessageRequestHeaderV2::FIELDS)) {
        let fields = to_ext(&values);
        let v2 = SendMessageRequestHeaderV2::from_ext_fields(&fields).unwrap();
        let v1 = SendMessageRequestHeader::from(v2.clone());
        let via_long = SendMessageRequestHeader::parse(protocol::request_code::SEND_MESSAGE, &v1.to_ext_fields()).unwrap();
        let via_short = SendMessageRequestHeader::parse(protocol::request_code::SEND_MESSAGE_V2, &fields).unwrap();
        prop_assert_eq!(&via_long, &via_short);
        prop_assert_eq!(SendMessageRequestHeaderV2::from(via_long).to_ext_fields(), fields);
    }
}
