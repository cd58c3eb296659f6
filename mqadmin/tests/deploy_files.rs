//! The files in deploy/: every layout config loads with no unknown key and the expected roles, and
//! `deploy/install.sh --destdir` stages units that `systemd-analyze verify` accepts (with the real
//! binaries installed where the units point), while a broken unit is reported.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{bin_dir, repo_root, run_with_timeout, MQADMIN};

#[test]
fn controller_configs_load_cleanly() {
    let conf = repo_root().join("deploy/conf");
    let mut peers = Vec::new();
    for i in 1..=3 {
        let path = conf.join(format!("controller-{i}.conf"));
        let text = std::fs::read_to_string(&path).unwrap();
        let c = controller::ControllerConfig::from_file_text(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(c.self_id, i, "{}", path.display());
        assert_eq!(c.peers.len(), 3, "{}", path.display());
        assert!(!c.enable_elect_unclean_master);
        peers.push(c.peers);
    }
    assert!(
        peers.windows(2).all(|w| w[0] == w[1]),
        "the three files list other peers"
    );
}

#[test]
fn layout_configs_load_cleanly() {
    let conf = repo_root().join("deploy/conf");
    let mut seen = 0;
    for layout in ["single-node", "2m-noslave", "2m-2s-async", "2m-2s-sync"] {
        let dir = conf.join(layout);
        let mut masters = 0;
        let mut slaves = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let (cfg, issues) =
                broker::config::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(issues.is_empty(), "{}: {issues:?}", path.display());
            assert_ne!(cfg.metrics_port, 0, "{}", path.display());
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert_eq!(
                cfg.broker_name,
                name.trim_end_matches("-s"),
                "{}",
                path.display()
            );
            match cfg.broker_role {
                broker::config::BrokerRole::Slave => {
                    slaves += 1;
                    assert!(
                        cfg.broker_id > 0 && cfg.ha_master_address.is_some(),
                        "{}",
                        path.display()
                    );
                }
                role => {
                    masters += 1;
                    assert_eq!(cfg.broker_id, 0);
                    let want_sync = layout == "2m-2s-sync";
                    assert_eq!(
                        role == broker::config::BrokerRole::SyncMaster,
                        want_sync,
                        "{}",
                        path.display()
                    );
                }
            }
            if layout != "single-node" {
                assert_eq!(
                    cfg.namesrv_addr.len(),
                    2,
                    "two name servers in {}",
                    path.display()
                );
            }
            seen += 1;
        }
        let expected = match layout {
            "single-node" => (1, 0),
            "2m-noslave" => (2, 0),
            _ => (2, 2),
        };
        assert_eq!((masters, slaves), expected, "{layout}");
    }
    assert_eq!(seen, 11);
}

#[test]
fn controller_mode_layout_loads_cleanly() {
    let dir = repo_root().join("deploy/conf/2g-3r-controller");
    let controller = controller::config::ControllerConfig::from_file_text(
        &std::fs::read_to_string(repo_root().join("deploy/conf/controller-1.conf")).unwrap(),
    )
    .unwrap();
    let controllers: Vec<String> = controller
        .peers
        .iter()
        .map(|p| p.addr.to_string())
        .collect();
    let mut replicas: std::collections::BTreeMap<String, usize> = Default::default();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let (cfg, issues) =
            broker::config::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(issues.is_empty(), "{}: {issues:?}", path.display());
        assert!(cfg.controller.enabled, "{}", path.display());
        assert_eq!(
            cfg.controller.controller_addr,
            controllers,
            "{}",
            path.display()
        );
        assert!(
            cfg.controller.all_ack_in_sync_state_set,
            "{}",
            path.display()
        );
        *replicas.entry(cfg.broker_name).or_default() += 1;
    }
    let expected: std::collections::BTreeMap<String, usize> =
        [("broker-a".to_owned(), 3), ("broker-b".to_owned(), 3)].into();
    assert_eq!(replicas, expected);
}

fn verify(root: &Path, unit: &str) -> (bool, String) {
    let mut cmd = Command::new("systemd-analyze");
    cmd.arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg(unit);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Warnings (unknown keys, bad values) do not change the exit status: any output is a failure.
    (out.status.success() && text.trim().is_empty(), text)
}

#[test]
fn installed_units_verify() {
    let analyze = Path::new("/usr/bin/systemd-analyze");
    if !analyze.exists() {
        eprintln!(
            "SKIPPED: /usr/bin/systemd-analyze is not installed, the units cannot be verified here"
        );
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // install.sh wants all three binaries in one folder: stage this build's.
    let bins = tempfile::tempdir().unwrap();
    for (from, to) in [
        (bin_dir().join("broker"), "broker"),
        (bin_dir().join("namesrv"), "namesrv"),
        (bin_dir().join("controller"), "controller"),
        (Path::new(MQADMIN).to_path_buf(), "mqadmin"),
    ] {
        std::os::unix::fs::symlink(&from, bins.path().join(to)).unwrap();
    }
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("deploy/install.sh"))
        .args([
            "--destdir",
            root.path().to_str().unwrap(),
            "--bin-dir",
            bins.path().to_str().unwrap(),
            "--namesrv",
            "--controller",
            repo_root()
                .join("deploy/conf/controller-1.conf")
                .to_str()
                .unwrap(),
        ])
        .args([
            "--broker",
            repo_root()
                .join("deploy/conf/2m-2s-sync/broker-a.toml")
                .to_str()
                .unwrap(),
        ]);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "install.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "usr/local/bin/rocketmq-broker",
        "usr/local/bin/rocketmq-namesrv",
        "usr/local/bin/mqadmin",
        "etc/rocketmq/broker-a.toml",
        "etc/rocketmq/namesrv.env",
        "usr/local/bin/rocketmq-controller",
        "etc/rocketmq/controller.conf",
        "var/lib/rocketmq/controller",
        "var/lib/rocketmq/broker-a",
    ] {
        assert!(
            root.path().join(f).exists(),
            "install.sh did not create {f}"
        );
    }
    // The units need systemd's own targets (network-online.target, ...) under the root.
    std::fs::create_dir_all(root.path().join("usr/lib/systemd")).unwrap();
    let copy = Command::new("cp")
        .args(["-a", "/usr/lib/systemd/system"])
        .arg(root.path().join("usr/lib/systemd"))
        .status()
        .unwrap();
    assert!(copy.success());

    for unit in [
        "namesrv.service",
        "broker@broker-a.service",
        "controller.service",
    ] {
        let (ok, text) = verify(root.path(), unit);
        assert!(ok, "systemd-analyze verify {unit}: {text}");
    }
    // What the issue asks of the units.
    for file in ["namesrv.service", "broker@.service", "controller.service"] {
        let text = std::fs::read_to_string(repo_root().join("deploy/systemd").join(file)).unwrap();
        for line in [
            "Type=notify",
            "User=rocketmq",
            "Restart=on-failure",
            "TimeoutStopSec=",
            "LimitNOFILE=",
            "KillSignal=SIGTERM",
            "StandardError=journal",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(line)),
                "{file} lacks {line}"
            );
        }
    }
    let broker_unit =
        std::fs::read_to_string(repo_root().join("deploy/systemd/broker@.service")).unwrap();
    assert!(broker_unit.lines().any(|l| l == "LimitMEMLOCK=infinity"));

    // The check can fail: a unit with a misspelt key and a missing binary is reported.
    let broken = broker_unit
        .replace("Restart=on-failure", "Restart=on-failure\nRestartt=always")
        .replace(
            "/usr/local/bin/rocketmq-broker",
            "/usr/local/bin/no-such-broker",
        );
    std::fs::write(
        root.path().join("etc/systemd/system/broken@.service"),
        broken,
    )
    .unwrap();
    let (ok, text) = verify(root.path(), "broken@x.service");
    assert!(
        !ok && text.contains("Restartt") && text.contains("no-such-broker"),
        "{text}"
    );
}
