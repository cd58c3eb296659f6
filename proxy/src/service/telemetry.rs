//! Telemetry: the SDK's long-lived stream. It sends its settings (what it publishes or subscribes),
//! the proxy answers with the settings in force (for a consumer: FIFO and max attempts from its
//! group's `SubscriptionGroupConfig`, as Apache's proxy answers), and the proxy pushes
//! orphaned-transaction recovery commands down it (see `transaction`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataMap;
use tonic::Status;

use super::caller::Caller;
use crate::convert::ms_duration;
use crate::pb::*;
use crate::remoting::group::GroupSettings;
use crate::session::Session;
use crate::state::Proxy;
use crate::status::{ok, status};

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

/// Commands queued to one SDK before pushes are dropped (the SDK reads them promptly).
const OUT_QUEUE: usize = 256;

/// Serves one stream. With ACL 2.0 on, each command is checked with the stream's headers and peer
/// (`auth`), as Apache's proxy checks each: a refused one is answered with its status.
pub fn open(
    proxy: Arc<Proxy>,
    caller: Caller,
    auth: (MetadataMap, Option<SocketAddr>),
    mut inbound: tonic::Streaming<TelemetryCommand>,
) -> ReceiverStream<Result<TelemetryCommand, Status>> {
    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let stream_id = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        while let Ok(Some(cmd)) = inbound.message().await {
            if let Err(e) = crate::acl2::check(&proxy, &auth.0, auth.1, &cmd).await {
                tracing::debug!("Telemetry refused: {e}");
                let refused = TelemetryCommand {
                    status: Some(e.status()),
                    command: None,
                };
                if tx.send(Ok(refused)).await.is_err() {
                    break;
                }
                continue;
            }
            let Some(telemetry_command::Command::Settings(settings)) = cmd.command else {
                // Thread stack traces and message verification results: nothing here asks for them.
                continue;
            };
            if caller.client_id.is_empty() {
                let _ = tx
                    .send(Ok(TelemetryCommand {
                        status: Some(status(Code::ClientIdRequired, "x-mq-client-id is required")),
                        command: None,
                    }))
                    .await;
                continue;
            }
            let (topics, group) = match &settings.pub_sub {
                Some(settings::PubSub::Publishing(p)) => {
                    (p.topics.iter().map(|t| t.name.clone()).collect(), None)
                }
                Some(settings::PubSub::Subscription(s)) => {
                    (Vec::new(), s.group.as_ref().map(|g| g.name.clone()))
                }
                None => (Vec::new(), None),
            };
            let publishes = !topics.is_empty();
            proxy.sessions.upsert(Session {
                client_id: caller.client_id.clone(),
                topics,
                group,
                tx: tx.clone(),
                stream_id,
            });
            if publishes {
                proxy.producers_changed.notify_one();
            }
            let group_settings = match &settings.pub_sub {
                Some(settings::PubSub::Subscription(s)) => group_settings(&proxy, &caller, s).await,
                _ => GroupSettings::default(),
            };
            let reply = TelemetryCommand {
                status: Some(ok()),
                command: Some(telemetry_command::Command::Settings(settings_in_force(
                    &proxy,
                    settings,
                    group_settings,
                ))),
            };
            if tx.send(Ok(reply)).await.is_err() {
                break;
            }
        }
        proxy.sessions.remove(&caller.client_id, Some(stream_id));
    });
    ReceiverStream::new(rx)
}

/// A subscribing group's settings, asked of a master of its first topic; the defaults (not FIFO) when
/// none answers, so the SDK still starts (ReceiveMessage asks again and decides how to pop).
async fn group_settings(proxy: &Proxy, caller: &Caller, sub: &Subscription) -> GroupSettings {
    let Some(group) = sub.group.as_ref().map(|g| g.name.as_str()) else {
        return GroupSettings::default();
    };
    let Some(topic) = sub.subscriptions.iter().find_map(|e| e.topic.as_ref()) else {
        return GroupSettings::default();
    };
    let addr = match proxy.routes.get(&proxy.pool, &topic.name).await {
        Ok(route) => route
            .broker_datas
            .iter()
            .find_map(|b| b.master_addr().map(str::to_string)),
        Err(e) => {
            tracing::warn!("settings of group {group}: no route of {}: {e}", topic.name);
            None
        }
    };
    let Some(addr) = addr else {
        return GroupSettings::default();
    };
    match proxy
        .groups
        .get(&proxy.pool, &addr, group, caller.creds.as_ref())
        .await
    {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("settings of group {group} from {addr}: {e}");
            GroupSettings::default()
        }
    }
}

/// The client's settings with the proxy's limits and retry policy filled in; a consumer's FIFO flag and
/// max attempts are its group's.
fn settings_in_force(proxy: &Proxy, mut s: Settings, group: GroupSettings) -> Settings {
    match &mut s.pub_sub {
        Some(settings::PubSub::Publishing(p)) => {
            p.max_body_size = i32::try_from(proxy.cfg.max_message_size).unwrap_or(i32::MAX);
            // The SDKs then refuse a message their route's queues do not accept, as the proxy would.
            p.validate_message_type = proxy.cfg.enable_topic_message_type_check;
            s.backoff_policy = Some(RetryPolicy {
                max_attempts: 3,
                strategy: Some(retry_policy::Strategy::ExponentialBackoff(
                    ExponentialBackoff {
                        initial: Some(ms_duration(10)),
                        max: Some(ms_duration(1_000)),
                        multiplier: 2.0,
                    },
                )),
            });
        }
        Some(settings::PubSub::Subscription(sub)) => {
            if sub.receive_batch_size.is_none() {
                sub.receive_batch_size = Some(32);
            }
            if sub.long_polling_timeout.is_none() {
                sub.long_polling_timeout = Some(ms_duration(20_000));
            }
            // The SDKs' FIFO push consumers then consume a message group one message at a time.
            sub.fifo = Some(group.consume_message_orderly);
            // RocketMQ's delay levels from the third on: the waits between a push consumer's retries.
            let next = [
                10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
            ]
            .iter()
            .map(|s| ms_duration(s * 1000))
            .collect();
            s.backoff_policy = Some(RetryPolicy {
                max_attempts: group.max_attempts(),
                strategy: Some(retry_policy::Strategy::CustomizedBackoff(
                    CustomizedBackoff { next },
                )),
            });
        }
        None => {}
    }
    s
}
