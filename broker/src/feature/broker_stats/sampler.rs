//! Shard 0 samples every shard's cumulative counters about once a second into `tps::TpsSamples`,
//! kept in a thread-local of its executor, for the rates of GET_BROKER_RUNTIME_INFO.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::local;
use super::tps::{Counters, TpsSamples};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

const PERIOD: Duration = Duration::from_secs(1);

thread_local! {
    static SAMPLES: RefCell<TpsSamples> = RefCell::new(TpsSamples::default());
}

/// Every shard's counters, summed.
pub async fn gather(shard: &Rc<Shard>) -> Counters {
    let answers = join_all(shard.every_shard().map(|s| {
        s.run(|s| async move {
            let (found, miss) = local::pulls();
            Counters {
                put_msgs: s.counters.msgs_put.get(),
                get_found: found,
                get_miss: miss,
                get_transferred: s.counters.msgs_got.get(),
            }
        })
    }))
    .await;
    answers
        .into_iter()
        .filter_map(Result::ok)
        .fold(Counters::default(), |a, b| Counters {
            put_msgs: a.put_msgs.wrapping_add(b.put_msgs),
            get_found: a.get_found.wrapping_add(b.get_found),
            get_miss: a.get_miss.wrapping_add(b.get_miss),
            get_transferred: a.get_transferred.wrapping_add(b.get_transferred),
        })
}

fn now_ms() -> u64 {
    u64::try_from(crate::state::topics::now_ms()).unwrap_or(0)
}

/// Starts the sampling task on shard 0 (other shards: nothing); it ends with the broker.
pub fn start(shard: &Rc<Shard>) {
    if shard.control.is_none() {
        return;
    }
    let s = shard.clone();
    glommio::spawn_local(async move {
        loop {
            let c = gather(&s).await;
            SAMPLES.with(|samples| samples.borrow_mut().push(now_ms(), c));
            glommio::timer::sleep(PERIOD).await;
            if s.shutting_down.get() {
                return;
            }
        }
    })
    .detach();
}

/// The rates as RocketMQ's runtime info names them, from this shard's samples (shard 0's).
pub fn rate_fields() -> Vec<(&'static str, String)> {
    SAMPLES.with(|samples| {
        let s = samples.borrow();
        vec![
            ("putTps", s.format(|c| c.put_msgs)),
            ("getFoundTps", s.format(|c| c.get_found)),
            ("getMissTps", s.format(|c| c.get_miss)),
            (
                "getTotalTps",
                s.format(|c| c.get_found.wrapping_add(c.get_miss)),
            ),
            ("getTransferedTps", s.format(|c| c.get_transferred)),
        ]
    })
}
