//! `mqadmin` against a broker with plain ACL on: refused without credentials, and signing with the
//! account Apache's `mqadmin` would use, from `$ROCKETMQ_HOME/conf/tools.yml` or from
//! `ROCKETMQ_ACCESS_KEY` / `ROCKETMQ_SECRET_KEY`.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin_dir, run_with_timeout, MQADMIN};

const ACL: &str =
    "accounts:\n  - accessKey: RocketMQ\n    secretKey: \"12345678\"\n    admin: true\n";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    // Four ports up (the shard's own, VIP and HA ports) are free too, or the broker says so.
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port > 2 && port < 60_000 {
            return port;
        }
    }
}

fn mqadmin(home: Option<&std::path::Path>, env: &[(&str, &str)], args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new(MQADMIN);
    cmd.args(args)
        .env_remove("ROCKETMQ_HOME")
        .env_remove("ROCKETMQ_ACCESS_KEY")
        .env_remove("ROCKETMQ_SECRET_KEY");
    if let Some(h) = home {
        cmd.env("ROCKETMQ_HOME", h);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn mqadmin_signs_with_the_account_of_tools_yml_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("plain_acl.yml");
    std::fs::write(&acl, ACL).unwrap();
    let port = free_port();
    let config = dir.path().join("broker.toml");
    std::fs::write(
        &config,
        format!(
            "brokerClusterName = \"SignCluster\"\nbrokerName = \"broker-s\"\nbrokerIP1 = \"127.0.0.1\"\n\
             listenPort = {port}\nshardCount = 1\nstorePathRootDir = \"{}\"\n\
             mappedFileSizeCommitLog = 16777216\naclEnable = true\naclFile = \"{}\"\n",
            dir.path().join("store").display(),
            acl.display()
        ),
    )
    .unwrap();
    let _broker = Killed(
        Command::new(bin_dir().join("broker"))
            .arg("--config")
            .arg(&config)
            .env("HOME", dir.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("broker.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let addr = format!("127.0.0.1:{port}");
    let start = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the broker never listened; its log:\n{}",
            std::fs::read_to_string(dir.path().join("broker.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let update = |topic: &'static str| {
        vec![
            "updateTopic",
            "-n",
            "127.0.0.1:1",
            "-b",
            addr.as_str(),
            "-t",
            topic,
        ]
    };

    let (ok, out) = mqadmin(None, &[], &update("Unsigned"));
    assert!(!ok, "an unsigned change was accepted: {out}");

    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(
        home.join("conf").join("tools.yml"),
        "accessKey: RocketMQ\nsecretKey: 12345678\n",
    )
    .unwrap();
    let (ok, out) = mqadmin(Some(&home), &[], &update("SignedByToolsYml"));
    assert!(ok, "signed with tools.yml: {out}");

    let keys = [
        ("ROCKETMQ_ACCESS_KEY", "RocketMQ"),
        ("ROCKETMQ_SECRET_KEY", "12345678"),
    ];
    let (ok, out) = mqadmin(None, &keys, &update("SignedByEnv"));
    assert!(ok, "signed with the environment: {out}");
    let wrong = [
        ("ROCKETMQ_ACCESS_KEY", "RocketMQ"),
        ("ROCKETMQ_SECRET_KEY", "wrong"),
    ];
    let (ok, out) = mqadmin(Some(&home), &wrong, &update("WrongSecret"));
    assert!(
        !ok,
        "a wrong secret was accepted (the environment wins over tools.yml): {out}"
    );
    let (ok, out) = mqadmin(
        None,
        &[("ROCKETMQ_ACCESS_KEY", "RocketMQ")],
        &update("Half"),
    );
    assert!(!ok && out.contains("ROCKETMQ_SECRET_KEY"), "{out}");
}
