//! CHECK_CLIENT_CONFIG, on the receiving shard (it needs only the config): a consumer starting with
//! a subscription that is not TAG asks whether the broker can filter by it, and refuses to start
//! when the answer is not SUCCESS. Answers as Apache's `ClientManageProcessor.checkClientConfig`.

use protocol::body::CheckClientRequestBody;
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::feature::pull_filter::{is_tag_type, SQL92};
use crate::feature::sql_filter::SqlFilter;
use crate::shard::Shard;

pub fn handle(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    // A JSON `null` body is no body, as fastjson reads it.
    let body = match protocol::body::from_json::<Option<CheckClientRequestBody>>(&req.body) {
        Ok(body) => body,
        Err(e) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("bad CHECK_CLIENT_CONFIG body: {e}"),
            )
        }
    };
    let Some(sub) = body.as_ref().and_then(|b| b.subscription_data.as_ref()) else {
        return ok();
    };
    let kind = &sub.expression_type;
    if is_tag_type(kind) {
        return ok();
    }
    if !shard.cfg.enable_property_filter {
        return error(
            rc::SYSTEM_ERROR,
            format!("The broker does not support consumer to filter message by {kind}"),
        );
    }
    if kind != SQL92 {
        return error(
            rc::SUBSCRIPTION_PARSE_FAILED,
            format!("no filter of expression type {kind}"),
        );
    }
    match SqlFilter::compile(&sub.sub_string) {
        Ok(_) => ok(),
        Err(e) => {
            let (client, group) = body
                .as_ref()
                .map_or(("", ""), |b| (b.client_id.as_str(), b.group.as_str()));
            tracing::warn!(
                "client {client} of group {group}: SQL92 filter {:?} does not compile: {e}",
                sub.sub_string
            );
            error(
                rc::SUBSCRIPTION_PARSE_FAILED,
                format!("Invalid MessageSelector. {e}"),
            )
        }
    }
}
