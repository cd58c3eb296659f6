//! Disk errors from a real file system: the broker's store lives on a FUSE file system of this test
//! (`fault_support::faultfs`) that passes everything through to a temp directory and answers EIO to
//! the fsyncs, writes or reads of one shard's CommitLog files while the test says so. The broker opens
//! them with O_DIRECT and does its I/O through io_uring, as on any disk. Shows: a failed fdatasync
//! makes the shard read-only until restart even after the disk heals (fsyncgate); failed writes
//! refuse sends until a rewrite succeeds; EIO on reading old data fails those pulls only; the other
//! shard keeps taking sends; nothing acknowledged is lost across SIGKILL restarts. Needs root and
//! /dev/fuse; prints SKIPPED and passes without them.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use fault_support::acked::Ledger;
use fault_support::faultfs::FaultMount;
use protocol::response_code;
use remoting::Client;

const TOPIC: &str = "FuseDisk";

fn shard_addr(broker: &Broker, shard: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], shard_broker_port(broker.port, shard)))
}

fn body(tag: &str, i: usize, len: usize) -> Vec<u8> {
    let mut b = format!("{tag}-{i}-").into_bytes();
    b.resize(len, b'a' + (i % 26) as u8);
    b
}

async fn send_one(client: &Client, ledger: &Ledger, queue: i32, body: Vec<u8>) -> i32 {
    let r = client
        .invoke(
            send_request(TOPIC, queue, &body, ""),
            Duration::from_secs(15),
        )
        .await
        .expect("send answered");
    if r.code == response_code::SUCCESS {
        let offset = r.ext("queueOffset").and_then(|o| o.parse().ok()).unwrap();
        ledger.record(TOPIC, queue, offset, body);
    }
    r.code
}

/// How many of process `pid`'s open files have `path_contains` in their path, and how many of those
/// are in O_DIRECT mode (from /proc/PID/fdinfo).
fn direct_fds(pid: i32, path_contains: &str) -> (usize, usize) {
    let (mut files, mut direct) = (0, 0);
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return (0, 0);
    };
    for fd in fds.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if !target.to_string_lossy().contains(path_contains) {
            continue;
        }
        files += 1;
        let info = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .unwrap_or(0);
        if flags & libc::O_DIRECT as u32 != 0 {
            direct += 1;
        }
    }
    (files, direct)
}

async fn verify(addr: SocketAddr, ledger: &Ledger, what: &str) {
    let c = connect(addr).await;
    ledger.verify(&c).await.assert_no_loss(what);
}

#[test]
fn eio_from_a_fuse_disk_fsyncgate_failed_writes_and_bad_reads() {
    let temp = tempfile::tempdir().unwrap();
    let (backing, mnt) = (temp.path().join("backing"), temp.path().join("mnt"));
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fs = match FaultMount::mount(&backing, &mnt) {
        Ok(fs) => fs,
        Err(e) => {
            println!("SKIPPED (FUSE disk faults): {e}");
            return;
        }
    };
    let mut broker = Broker::builder()
        .store_root(mnt.join("store"))
        .extra("flushDiskType = \"SYNC_FLUSH\"\nsyncFlushTimeout = 2000")
        .start();
    let (a0, a1) = (shard_addr(&broker, 0), shard_addr(&broker, 1));
    let ledgers = [Ledger::default(), Ledger::default()];

    // 1. fdatasync EIO on shard 0, then the disk heals: the shard stays read-only.
    run_local(async {
        let c0 = connect(a0).await;
        let c1 = connect(a1).await;
        // 80 x 64 KiB: past the first 4 MiB segment, for the read case below.
        for i in 0..80 {
            let code = send_one(&c0, &ledgers[0], 0, body("f0", i, 64 * 1024)).await;
            assert_eq!(
                code,
                response_code::SUCCESS,
                "before the fault:\n{}",
                broker.log()
            );
        }
        // glommio sets O_DIRECT with fcntl after the open, which the FUSE server does not see:
        // check the broker's open CommitLog files in /proc.
        let (files, direct) = direct_fds(broker.pid(), "mnt/store/shard-0/commitlog/");
        assert!(
            files > 0 && direct == files,
            "{direct} of {files} CommitLog fds in O_DIRECT mode"
        );
        fs.fail(&fs.faults.fsyncs, "shard-0/commitlog");
        let code = send_one(&c0, &ledgers[0], 1, body("f0x", 0, 300)).await;
        assert_eq!(
            code,
            response_code::SYSTEM_ERROR,
            "the send whose sync failed"
        );
        fs.heal();
        let until = Instant::now() + Duration::from_secs(2);
        let mut refused = 0;
        while Instant::now() < until {
            let code = send_one(&c0, &ledgers[0], 1, body("f0y", refused, 300)).await;
            assert_eq!(
                code,
                response_code::SERVICE_NOT_AVAILABLE,
                "a healed disk is not believed"
            );
            refused += 1;
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        for i in 0..20 {
            let code = send_one(&c1, &ledgers[1], (i % 4) as i32, body("f1", i, 300)).await;
            assert_eq!(code, response_code::SUCCESS, "shard 1 unaffected");
        }
        let info = runtime_info(a0).await;
        assert_eq!(info.get("storeReadOnly").map(String::as_str), Some("true"));
        println!(
            "{direct} of {files} CommitLog fds of shard 0 O_DIRECT; fsync EIO: refused {refused} sends after the disk healed; reason: {:?}",
            info.get("storeReadOnlyReason")
        );
    });
    broker.kill9();
    broker.restart();
    run_local(async {
        verify(a0, &ledgers[0], "shard 0 after the fsync fault").await;
        verify(a1, &ledgers[1], "shard 1 after the fsync fault").await;
    });

    // 2. Writes of shard 1 fail with EIO for 2 s: sends refused, then accepted again.
    run_local(async {
        let c1 = connect(a1).await;
        fs.fail(&fs.faults.writes, "shard-1/commitlog");
        let code = send_one(&c1, &ledgers[1], 0, body("w1", 0, 300)).await;
        assert_eq!(
            code,
            response_code::SYSTEM_ERROR,
            "the send whose write failed"
        );
        let code = send_one(&c1, &ledgers[1], 0, body("w1", 1, 300)).await;
        assert_eq!(code, response_code::SERVICE_NOT_AVAILABLE);
        glommio::timer::sleep(Duration::from_secs(2)).await;
        fs.heal();
        let began = Instant::now();
        let mut i = 2;
        loop {
            let code = send_one(&c1, &ledgers[1], 0, body("w1", i, 300)).await;
            i += 1;
            if code == response_code::SUCCESS {
                break;
            }
            assert_eq!(code, response_code::SERVICE_NOT_AVAILABLE);
            assert!(
                began.elapsed() < Duration::from_secs(10),
                "never writable again"
            );
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "write EIO: writable again {:?} after the disk healed",
            began.elapsed()
        );
    });

    // 3. Reads of shard 0's CommitLog fail: pulls of data only on disk get an error, the store
    //    stays writable.
    broker.stop();
    broker.restart();
    run_local(async {
        let c0 = connect(a0).await;
        fs.fail(&fs.faults.reads, "shard-0/commitlog/00000000000000000000");
        let r = pull(&c0, TOPIC, 0, 0).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR, "{:?}", r.remark);
        let remark = r.remark.clone().unwrap_or_default();
        assert!(remark.contains("os error 5"), "{remark}");
        let code = send_one(&c0, &ledgers[0], 2, body("r0", 0, 300)).await;
        assert_eq!(
            code,
            response_code::SUCCESS,
            "writable while old reads fail"
        );
        fs.heal();
        println!(
            "read EIO: pull answered {remark:?}; {} EIOs injected in all",
            fs.faults.injected.load(std::sync::atomic::Ordering::SeqCst)
        );
    });
    broker.kill9();
    broker.restart();
    run_local(async {
        verify(a0, &ledgers[0], "shard 0 at the end").await;
        verify(a1, &ledgers[1], "shard 1 at the end").await;
    });
    broker.kill9();
    drop(fs);
}
