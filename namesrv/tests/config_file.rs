//! `namesrv -c namesrv.properties`, as Apache's `mqnamesrv -c`: the file's keys are applied, keys
//! not used or unknown are reported apart, refused keys stop the start, and flags override the file.

// Test code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts the binary with `args` and its stderr in `dir/stderr`; answers the child and its first
/// stdout line (empty when it exited first).
fn start(dir: &std::path::Path, args: &[&str]) -> (Child, String) {
    let stderr = std::fs::File::create(dir.join("stderr")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_namesrv"))
        .args(args)
        .env("RUST_LOG", "warn")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn file_keys_apply_flags_override_and_unused_keys_are_told_apart_from_typos() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.properties");
    std::fs::write(
        &file,
        "bindAddress=127.0.0.1\nlistenPort=0\norderMessageEnable=true\nserverWorkerThreads=8\n\
         enableAllTopicList=true\nlistenPrt=9876\n",
    )
    .unwrap();
    let (child, line) = start(dir.path(), &["-c", file.to_str().unwrap()]);
    stop(child);
    assert!(
        line.starts_with("namesrv listening on 127.0.0.1:"),
        "{line}"
    );
    let log = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert!(
        log.contains("config key `serverWorkerThreads` is accepted but not used: Netty"),
        "{log}"
    );
    assert!(
        log.contains("unknown config key `listenPrt` ignored"),
        "{log}"
    );
    assert!(!log.contains("enableAllTopicList"), "{log}");

    // A flag wins over the file: port 1 in the file, port 0 (any free one) on the command line.
    std::fs::write(&file, "bindAddress=127.0.0.1\nlistenPort=1\n").unwrap();
    let (child, line) = start(
        dir.path(),
        &["-c", file.to_str().unwrap(), "--listen", "127.0.0.1:0"],
    );
    stop(child);
    let port: u16 = line.trim().rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 1, "{line}");
}

#[test]
fn a_refused_key_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.properties");
    std::fs::write(&file, "listenPort=0\nenableTopicList=false\n").unwrap();
    let (mut child, line) = start(dir.path(), &["-c", file.to_str().unwrap()]);
    let status = exit_within(&mut child, Duration::from_secs(20));
    stop(child);
    assert!(line.is_empty(), "{line}");
    assert!(status.is_some_and(|s| !s.success()), "{status:?}");
    let log = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert!(
        log.contains("enableTopicList") && log.contains("remove the key"),
        "{log}"
    );
}
