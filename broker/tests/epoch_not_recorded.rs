//! Controller mode: a replica elected master whose epoch file cannot be written (a full disk, an I/O
//! error) takes no writes until the new epoch is recorded.
//!
//! Data written in an epoch the file does not list counts as the previous epoch's. The old master's
//! unreplicated tail is also that epoch's, at the same offsets, so when the old master came back the
//! two logs looked alike up to its end and it could not be made to cut that tail. A controller, an
//! in-process name server and two brokers of one group; the slave's epoch file is made unwritable
//! (a directory where its temp file goes) before the master is SIGKILLed: the elected slave refuses
//! sends for as long as that lasts, then records the epoch and takes sends from the epoch's start on.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{run_local, Broker, ControllerProc};
use protocol::response_code;
use remoting::Client;

const GROUP: &str = "broker-t";
const TOPIC: &str = "EpochTopic";

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn controller_helper_process() {
    common::serve_controller_if_asked();
}

/// The group's master address and epoch, as the controller says (None before it has one).
fn master(controller: &ControllerProc) -> Option<(String, i64)> {
    let resp = controller.replica_info(GROUP)?;
    let addr = resp.ext("masterAddress").filter(|a| !a.is_empty())?;
    Some((addr.to_owned(), resp.ext("masterEpoch")?.parse().ok()?))
}

fn in_sync(controller: &ControllerProc) -> usize {
    controller
        .replica_info(GROUP)
        .and_then(|r| ControllerProc::sync_state_set(&r))
        .map_or(0, |set| set.len())
}

/// One send: the physical offset of the stored message when answered SUCCESS, else the code.
fn send_one(addr: SocketAddr) -> Result<i64, i32> {
    run_local(async move {
        let Ok(c) = Client::connect(addr, Duration::from_secs(1)).await else {
            return Err(-1);
        };
        let Ok(resp) = c
            .invoke(
                common::send_request(TOPIC, 0, b"epoch-body", ""),
                Duration::from_secs(5),
            )
            .await
        else {
            return Err(-2);
        };
        if resp.code != response_code::SUCCESS {
            return Err(resp.code);
        }
        // offsetMsgId: 16 hex digits of store host, then 16 of the physical offset.
        let id = resp.ext("msgId").expect("msgId");
        Ok(i64::from_str_radix(id.get(16..32).expect("msgId of 32 chars"), 16).expect("hex"))
    })
}

/// The (epoch, start offset) entries of a broker's shard 0 epoch file.
fn epochs(b: &Broker) -> Vec<(i64, i64)> {
    let text =
        std::fs::read_to_string(shard_dir(b).join("epochFileCheckpoint")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter(|l| !l.starts_with("crc"))
        .filter_map(|l| {
            let (e, s) = l.split_once(' ')?;
            Some((e.parse().ok()?, s.parse().ok()?))
        })
        .collect()
}

fn shard_dir(b: &Broker) -> PathBuf {
    b.dir.join("store").join("shard-0")
}

#[test]
fn an_elected_replica_takes_no_writes_before_its_epoch_is_recorded() {
    let ns = common::start_namesrv_in_process();
    let controller = ControllerProc::start("controller_helper_process");
    let extra = format!(
        "shardCount = 1\nenableControllerMode = true\ncontrollerAddr = \"{}\"\n\
         namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 1000\nflushDiskType = \"SYNC_FLUSH\"\n\
         allAckInSyncStateSet = true\nslaveReadEnable = true\n",
        controller.addr
    );
    let mut old = Broker::start(&extra);
    let old_addr = old.addr().to_string();
    let first_epoch = controller.wait_until("the first broker elected", &[&old], || {
        master(&controller)
            .filter(|(a, _)| *a == old_addr)
            .map(|(_, e)| e)
    });
    let new = Broker::start(&extra);
    let new_addr = new.addr().to_string();
    controller.wait_until("2 replicas in sync", &[&old, &new], || {
        (in_sync(&controller) == 2).then_some(())
    });
    controller.wait_until("a send acknowledged by both", &[&old, &new], || {
        send_one(old.addr()).ok()
    });

    // The slave's epoch file cannot be replaced from now on.
    let blocker = shard_dir(&new).join("epochFileCheckpoint.tmp");
    std::fs::create_dir(&blocker).unwrap();
    old.kill9();
    let epoch = controller.wait_until("the slave elected", &[&new], || {
        master(&controller)
            .filter(|(a, e)| *a == new_addr && *e > first_epoch)
            .map(|(_, e)| e)
    });
    // Past the role change on the broker (the controller answers first).
    controller.wait_until("the election applied", &[&new], || {
        new.log().contains("not recorded").then_some(())
    });
    let held_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < held_until {
        if let Ok(phys) = send_one(new.addr()) {
            println!("---- broker {new_addr}:\n{}", new.log());
            panic!(
                "the master of epoch {epoch} stored a message at {phys} though its epoch file lists {:?}",
                epochs(&new)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        epochs(&new).iter().all(|(e, _)| *e < epoch),
        "epoch {epoch} recorded through the blocked temp file: {:?}",
        epochs(&new)
    );

    // The disk is writable again: the epoch is recorded, then sends are taken after its start.
    std::fs::remove_dir(&blocker).unwrap();
    let phys = controller.wait_until("a send on the new master", &[&new], || {
        send_one(new.addr()).ok()
    });
    let list = epochs(&new);
    let (last_epoch, start) = *list.last().expect("epoch entries");
    assert_eq!(
        last_epoch, epoch,
        "the new epoch is the last entry: {list:?}"
    );
    assert!(
        start <= phys,
        "epoch {epoch} starts at {start}, after the message stored at {phys}"
    );
}
