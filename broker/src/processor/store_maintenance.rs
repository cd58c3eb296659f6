//! The store-maintenance admin codes Apache's mqadmin sends, run now on every shard of the broker
//! the request reached (each answers with what it did, in the remark):
//! - DELETE_EXPIRED_COMMITLOG (329, `deleteExpiredCommitLog`): a retention pass outside `deleteWhen`:
//!   CommitLog segments older than `fileReservedTime` go, with the ConsumeQueue and index files
//!   they leave pointing at nothing (Apache's `executeDeleteFilesManually`).
//! - CLEAN_EXPIRED_CONSUMEQUEUE (306, `cleanExpiredCQ`): ConsumeQueue files whose every unit points
//!   below the CommitLog's first offset are deleted and the queues' min offsets raised. Unlike
//!   Apache, a queue is never dropped whole here: its offsets go on from where they were, so
//!   consumers' committed offsets stay valid.
//! - CLEAN_UNUSED_TOPIC (316, `cleanUnusedTopic`): the ConsumeQueues (and consumer offsets) of topics
//!   this broker no longer has a config for, except Apache's system topics and LMQ queues.

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::error;
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// One shard's result as text, or why it failed.
type ShardAnswer = Result<String, String>;

/// Runs `job` on every shard of the broker reached through `receiver`; SUCCESS with each shard's
/// line as the remark, or SYSTEM_ERROR naming the shards that failed.
async fn on_broker_shards<F, Fut>(
    shard: &Rc<Shard>,
    receiver: usize,
    kind: &'static str,
    job: F,
) -> RemotingCommand
where
    F: Fn(Rc<Shard>) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ShardAnswer> + 'static,
{
    let calls = shard.broker_shards(receiver).map(|s| {
        let job = job.clone();
        let id = s.id();
        async move {
            let answer = shard.mesh.call(id, kind, job).await;
            (id, answer)
        }
    });
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for (id, answer) in join_all(calls).await {
        match answer {
            Ok(Ok(line)) => lines.push(format!("shard {id}: {line}")),
            Ok(Err(e)) => failed.push(format!("shard {id}: {e}")),
            Err(e) => failed.push(format!("shard {id}: {e}")),
        }
    }
    if failed.is_empty() {
        RemotingCommand::response(rc::SUCCESS, Some(lines.join("; ")))
    } else {
        error(rc::SYSTEM_ERROR, failed.join("; "))
    }
}

/// DELETE_EXPIRED_COMMITLOG.
pub async fn delete_expired_commit_log(shard: &Rc<Shard>, receiver: usize) -> RemotingCommand {
    on_broker_shards(shard, receiver, "delete_expired_commitlog", |s: Rc<Shard>| async move {
        let now = crate::state::topics::now_ms();
        match s.store.run_retention(now, true).await {
            Ok(r) => {
                tracing::warn!(
                    "deleteExpiredCommitLog by an admin: {} CommitLog segments, {} ConsumeQueue and {} index files deleted",
                    r.commitlog_segments.len(),
                    r.consume_queue_files,
                    r.index_files
                );
                Ok(format!(
                    "{} CommitLog segments, {} ConsumeQueue files, {} index files deleted",
                    r.commitlog_segments.len(),
                    r.consume_queue_files,
                    r.index_files
                ))
            }
            Err(e) => Err(format!("retention failed: {e}")),
        }
    })
    .await
}

/// CLEAN_EXPIRED_CONSUMEQUEUE.
pub async fn clean_expired_consume_queue(shard: &Rc<Shard>, receiver: usize) -> RemotingCommand {
    on_broker_shards(
        shard,
        receiver,
        "clean_expired_cq",
        |s: Rc<Shard>| async move {
            match s.store.clean_expired_consume_queues().await {
                Ok(n) => {
                    tracing::info!("cleanExpiredCQ by an admin: {n} ConsumeQueue files deleted");
                    Ok(format!("{n} expired ConsumeQueue files deleted"))
                }
                Err(e) => Err(format!("cleaning ConsumeQueues failed: {e}")),
            }
        },
    )
    .await
}

/// Topics whose queues CLEAN_UNUSED_TOPIC keeps without a config: Apache's system topics and LMQ.
fn always_kept(topic: &str) -> bool {
    protocol::system_topics::is_system_topic(topic) || topic.starts_with("%LMQ%")
}

/// CLEAN_UNUSED_TOPIC.
pub async fn clean_unused_topic(shard: &Rc<Shard>, receiver: usize) -> RemotingCommand {
    on_broker_shards(
        shard,
        receiver,
        "clean_unused_topic",
        |s: Rc<Shard>| async move {
            let mut unused: Vec<String> = s
                .store
                .queues()
                .into_iter()
                .map(|(topic, _)| topic)
                .filter(|t| !always_kept(t) && s.topics.borrow().get(t).is_none())
                .collect();
            unused.dedup();
            for topic in &unused {
                s.store.delete_topic(topic).await;
                s.offsets.borrow_mut().remove_topic(topic);
            }
            if !unused.is_empty() {
                tracing::warn!(
                    "cleanUnusedTopic by an admin: queues of {} removed",
                    unused.join(", ")
                );
            }
            Ok(format!(
                "queues of {} unused topics removed{}",
                unused.len(),
                if unused.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", unused.join(", "))
                }
            ))
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_topics_and_lmq_are_kept() {
        assert!(always_kept("SCHEDULE_TOPIC_XXXX"));
        assert!(always_kept("rmq_sys_wheel_timer"));
        assert!(always_kept("%LMQ%abc"));
        assert!(!always_kept("orders"));
        assert!(!always_kept("%RETRY%g1"));
    }
}
