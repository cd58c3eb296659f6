//! `deploy/install.sh --console` stages the console binary, its unit and its env file, and
//! `systemd-analyze verify` accepts the unit; a unit pointing at a missing binary is reported.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn verify(root: &Path, unit: &str) -> (bool, String) {
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg(unit)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Warnings do not change the exit status: any output is a failure.
    (out.status.success() && text.trim().is_empty(), text)
}

#[test]
fn console_unit_installs_and_verifies() {
    if !Path::new("/usr/bin/systemd-analyze").exists() {
        eprintln!(
            "SKIPPED: /usr/bin/systemd-analyze is not installed, the unit cannot be verified"
        );
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // install.sh checks that every binary it copies exists; only the console matters here, so the
    // console binary stands in for the others.
    let bins = tempfile::tempdir().unwrap();
    for name in ["namesrv", "broker", "mqadmin", "console"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_console"), bins.path().join(name)).unwrap();
    }
    let out = Command::new("bash")
        .arg(repo_root().join("deploy/install.sh"))
        .arg("--destdir")
        .arg(root.path())
        .arg("--bin-dir")
        .arg(bins.path())
        .arg("--console")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(root.path().join("usr/local/bin/rocketmq-console").is_file());
    let env = root.path().join("etc/rocketmq/console.env");
    let mode = std::fs::metadata(&env).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "console.env may hold a secret");
    let text = std::fs::read_to_string(&env).unwrap();
    assert!(text.contains("NAMESRV_ADDR=") && text.contains("CONSOLE_ENABLE_ADMIN=false"));

    std::fs::create_dir_all(root.path().join("usr/lib/systemd")).unwrap();
    let copy = Command::new("cp")
        .args(["-a", "/usr/lib/systemd/system"])
        .arg(root.path().join("usr/lib/systemd"))
        .status()
        .unwrap();
    assert!(copy.success());
    let (ok, text) = verify(root.path(), "console.service");
    assert!(ok, "systemd-analyze verify console.service: {text}");

    // The check can fail: the same unit pointing at a binary that is not there.
    let unit =
        std::fs::read_to_string(root.path().join("etc/systemd/system/console.service")).unwrap();
    std::fs::write(
        root.path()
            .join("etc/systemd/system/broken-console.service"),
        unit.replace(
            "/usr/local/bin/rocketmq-console",
            "/usr/local/bin/no-such-console",
        ),
    )
    .unwrap();
    let (ok, text) = verify(root.path(), "broken-console.service");
    assert!(!ok && text.contains("no-such-console"), "{text}");
}
