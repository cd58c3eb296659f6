//! Each shard samples its own cumulative counters about once a second into `tps::TpsSamples`, kept
//! in a thread-local of its executor; the rates of GET_BROKER_RUNTIME_INFO sum the broker's shards.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::daily::{local_day, DailyTotals};
use super::local;
use super::tps::{format_rates, Counters, TpsSamples, WINDOWS_S};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

const PERIOD: Duration = Duration::from_secs(1);

thread_local! {
    static SAMPLES: RefCell<TpsSamples> = RefCell::new(TpsSamples::default());
    static DAILY: RefCell<DailyTotals> = RefCell::new(DailyTotals::default());
}

/// This shard's cumulative counters.
fn counters(shard: &Shard) -> Counters {
    let (found, miss) = local::pulls();
    Counters {
        put_msgs: shard.counters.msgs_put.get(),
        get_found: found,
        get_miss: miss,
        get_transferred: shard.counters.msgs_got.get(),
    }
}

fn now_ms() -> u64 {
    u64::try_from(crate::state::topics::now_ms()).unwrap_or(0)
}

/// Starts this shard's sampling task; it ends with the broker. Each shard samples only itself, so
/// no message crosses cores for it; a broker's rates are summed when asked.
pub fn start(shard: &Rc<Shard>) {
    let s = shard.clone();
    glommio::spawn_local(async move {
        loop {
            let c = counters(&s);
            let now = now_ms();
            SAMPLES.with(|samples| samples.borrow_mut().push(now, c));
            let day = local_day(i64::try_from(now).unwrap_or(i64::MAX));
            DAILY.with(|d| d.borrow_mut().sample(day, c.put_msgs, c.get_transferred));
            glommio::timer::sleep(PERIOD).await;
            if s.shutting_down.get() {
                return;
            }
        }
    })
    .detach();
}

/// The rate fields, in `RATE_NAMES` order, each over the three windows.
pub(crate) type Rates = [[f64; WINDOWS_S.len()]; RATE_NAMES.len()];

/// The rates as RocketMQ's runtime info names them.
const RATE_NAMES: [&str; 5] = [
    "putTps",
    "getFoundTps",
    "getMissTps",
    "getTotalTps",
    "getTransferedTps",
];

/// This shard's rates, from its own samples.
pub(crate) fn local_rates() -> Rates {
    let fields: [fn(&Counters) -> u64; RATE_NAMES.len()] = [
        |c| c.put_msgs,
        |c| c.get_found,
        |c| c.get_miss,
        |c| c.get_found.wrapping_add(c.get_miss),
        |c| c.get_transferred,
    ];
    SAMPLES.with(|samples| {
        let s = samples.borrow();
        fields.map(|f| WINDOWS_S.map(|w| s.rate(w, f)))
    })
}

/// This shard's totals since this morning.
pub(crate) fn local_daily() -> DailyTotals {
    DAILY.with(|d| *d.borrow())
}

/// The morning totals of the broker a client reached through shard `receiver`, summed over its
/// shards.
pub async fn daily_totals(shard: &Rc<Shard>, receiver: usize) -> DailyTotals {
    join_all(shard.broker_shards(receiver).map(|s| s.daily_totals()))
        .await
        .into_iter()
        .filter_map(Result::ok)
        .fold(DailyTotals::default(), DailyTotals::merge)
}

/// The rates of the broker a client reached through shard `receiver`, summed over its shards, as
/// RocketMQ formats them ("x.xx y.yy z.zz": 10 s, 1 min, 10 min).
pub async fn rate_fields(shard: &Rc<Shard>, receiver: usize) -> Vec<(&'static str, String)> {
    let answers = join_all(shard.broker_shards(receiver).map(|s| s.rates())).await;
    let mut sum: Rates = [[0.0; WINDOWS_S.len()]; RATE_NAMES.len()];
    for rates in answers.into_iter().filter_map(Result::ok) {
        for (total, shard_rate) in sum.iter_mut().zip(rates) {
            for (t, r) in total.iter_mut().zip(shard_rate) {
                *t += r;
            }
        }
    }
    RATE_NAMES
        .iter()
        .zip(sum)
        .map(|(name, windows)| (*name, format_rates(&windows)))
        .collect()
}
