//! Telemetry: the SDK's long-lived stream. It sends its settings (what it publishes or subscribes),
//! the proxy answers with the settings in force, and the proxy pushes orphaned-transaction
//! recovery commands down it (see `transaction`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::Caller;
use crate::convert::ms_duration;
use crate::pb::*;
use crate::session::Session;
use crate::state::Proxy;
use crate::status::{ok, status};

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

/// Commands queued to one SDK before pushes are dropped (the SDK reads them promptly).
const OUT_QUEUE: usize = 256;

/// RocketMQ's default `retryMaxTimes` (16) + the first delivery.
const CONSUMER_MAX_ATTEMPTS: i32 = 17;

pub fn open(
    proxy: Arc<Proxy>,
    caller: Caller,
    mut inbound: tonic::Streaming<TelemetryCommand>,
) -> ReceiverStream<Result<TelemetryCommand, Status>> {
    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let stream_id = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        while let Ok(Some(cmd)) = inbound.message().await {
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
            let (topics, group, fifo) = match &settings.pub_sub {
                Some(settings::PubSub::Publishing(p)) => {
                    (p.topics.iter().map(|t| t.name.clone()).collect(), None, false)
                }
                Some(settings::PubSub::Subscription(s)) => (
                    Vec::new(),
                    s.group.as_ref().map(|g| g.name.clone()),
                    s.fifo.unwrap_or(false),
                ),
                None => (Vec::new(), None, false),
            };
            let publishes = !topics.is_empty();
            proxy.sessions.upsert(Session {
                client_id: caller.client_id.clone(),
                topics,
                group,
                fifo,
                tx: tx.clone(),
                stream_id,
            });
            if publishes {
                proxy.producers_changed.notify_one();
            }
            let reply = TelemetryCommand {
                status: Some(ok()),
                command: Some(telemetry_command::Command::Settings(settings_in_force(
                    &proxy, settings,
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

/// The client's settings with the proxy's limits and retry policy filled in.
fn settings_in_force(proxy: &Proxy, mut s: Settings) -> Settings {
    match &mut s.pub_sub {
        Some(settings::PubSub::Publishing(p)) => {
            p.max_body_size = i32::try_from(proxy.cfg.max_message_size).unwrap_or(i32::MAX);
            s.backoff_policy = Some(RetryPolicy {
                max_attempts: 3,
                strategy: Some(retry_policy::Strategy::ExponentialBackoff(ExponentialBackoff {
                    initial: Some(ms_duration(10)),
                    max: Some(ms_duration(1_000)),
                    multiplier: 2.0,
                })),
            });
        }
        Some(settings::PubSub::Subscription(sub)) => {
            if sub.receive_batch_size.is_none() {
                sub.receive_batch_size = Some(32);
            }
            if sub.long_polling_timeout.is_none() {
                sub.long_polling_timeout = Some(ms_duration(20_000));
            }
            // RocketMQ's delay levels from the third on: the waits between a push consumer's retries.
            let next = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
                .iter()
                .map(|s| ms_duration(s * 1000))
                .collect();
            s.backoff_policy = Some(RetryPolicy {
                max_attempts: CONSUMER_MAX_ATTEMPTS,
                strategy: Some(retry_policy::Strategy::CustomizedBackoff(CustomizedBackoff {
                    next,
                })),
            });
        }
        None => {}
    }
    s
}
