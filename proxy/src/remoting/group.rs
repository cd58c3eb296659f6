//! Consumer groups' settings from the brokers (GET_SUBSCRIPTIONGROUP_CONFIG), cached briefly, as
//! Apache's proxy caches them: `consumeMessageOrderly` decides whether the proxy pops in order and
//! tells the SDKs their subscription is FIFO, `retryMaxTimes` the SDKs' max delivery attempts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use protocol::body::from_json;
use protocol::{request_code, response_code, RemotingCommand};
use serde::Deserialize;

use super::pool::Pool;
use crate::status::ProxyError;
use protocol::signature::Credentials;

/// How long a group's settings are used before they are asked again (`mqadmin updateSubGroup` takes
/// effect in the proxy within this time).
const GROUP_TTL: Duration = Duration::from_secs(3);

/// What the proxy uses of a `SubscriptionGroupConfig`; RocketMQ's defaults when the broker has no
/// such group yet (it is created on first use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupSettings {
    #[serde(default)]
    pub consume_message_orderly: bool,
    #[serde(default = "default_retry_max_times")]
    pub retry_max_times: i32,
}

fn default_retry_max_times() -> i32 {
    16
}

impl Default for GroupSettings {
    fn default() -> Self {
        GroupSettings {
            consume_message_orderly: false,
            retry_max_times: default_retry_max_times(),
        }
    }
}

impl GroupSettings {
    /// Deliveries of a message before it goes to `%DLQ%group`: the first one and `retryMaxTimes`
    /// retries (Apache's proxy answers the SDKs the same).
    pub fn max_attempts(&self) -> i32 {
        self.retry_max_times.max(0).saturating_add(1)
    }
}

#[derive(Default)]
pub struct Groups {
    cache: Mutex<HashMap<String, (Instant, GroupSettings)>>,
}

impl Groups {
    /// `group`'s settings as the broker at `addr` holds them (every broker of a cluster holds the same
    /// when they were set with `mqadmin updateSubGroup -c`). A group the broker does not know yet has
    /// the defaults; a broker that cannot be asked is an error (a pop there would fail too).
    pub async fn get(
        &self,
        pool: &Pool,
        addr: &str,
        group: &str,
        creds: Option<&Credentials>,
    ) -> Result<GroupSettings, ProxyError> {
        if let Some((at, s)) = self.lock().get(group) {
            if at.elapsed() < GROUP_TTL {
                return Ok(*s);
            }
        }
        let cmd = RemotingCommand::request(request_code::GET_SUBSCRIPTIONGROUP_CONFIG)
            .with_ext("group", group);
        let resp = pool.invoke(addr, cmd, creds, None).await?;
        let settings = match resp.code {
            response_code::SUCCESS => from_json::<GroupSettings>(&resp.body).map_err(|e| {
                ProxyError::Internal(format!("bad subscription group {group} from {addr}: {e}"))
            })?,
            // Not created yet, or a 4.x broker that does not serve the code: no orderly groups there.
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST
            | response_code::REQUEST_CODE_NOT_SUPPORTED => GroupSettings::default(),
            _ => {
                return Err(ProxyError::from_remoting(
                    &resp,
                    &format!("subscription group {group}"),
                ))
            }
        };
        self.lock()
            .insert(group.to_string(), (Instant::now(), settings));
        Ok(settings)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, GroupSettings)>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_from_java_json_with_defaults() {
        let java = br#"{"groupName":"g","consumeEnable":true,"consumeMessageOrderly":true,"retryMaxTimes":3,"groupRetryPolicy":{"type":"CUSTOMIZED"},"attributes":{}}"#;
        let s: GroupSettings = from_json(java).unwrap();
        assert_eq!(
            s,
            GroupSettings {
                consume_message_orderly: true,
                retry_max_times: 3
            }
        );
        assert_eq!(s.max_attempts(), 4);
        // A 4.x config (no consumeMessageOrderly) is not orderly.
        let old: GroupSettings = from_json(br#"{"groupName":"g"}"#).unwrap();
        assert_eq!(old, GroupSettings::default());
        assert_eq!(old.max_attempts(), 17);
    }
}
