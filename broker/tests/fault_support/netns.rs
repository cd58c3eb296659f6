//! Network namespaces the fault tests make for themselves: one namespace joined to the test's own by
//! a veth pair on a /30 of its own, and packet loss inside it from nftables rules
//! (`numgen random mod 100 < N drop`, on input and output, with counters), since this kernel has no
//! netem. Needs root and the `ip` and `nft` commands (`scripts/setup-test-host.sh` installs them);
//! [`NetNs::available`] says why not when they are missing. Everything is removed on drop.

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The nftables table the loss rules live in.
const TABLE: &str = "rmqfault";

fn run(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// One namespace and its link to the test's namespace.
pub struct NetNs {
    pub name: String,
    host_if: String,
    /// The test's end of the link.
    pub host_ip: Ipv4Addr,
    /// The namespace's end: what a process inside listens on.
    pub ns_ip: Ipv4Addr,
}

impl NetNs {
    /// `Err(why)` when namespaces or nftables cannot be used here (not root, commands missing).
    pub fn available() -> Result<(), String> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: network namespaces and nftables need root".into());
        }
        for cmd in [["ip", "-V"], ["nft", "--version"]] {
            run(&cmd).map_err(|e| format!("{e} (run scripts/setup-test-host.sh)"))?;
        }
        Ok(())
    }

    /// A new namespace with loopback up and a veth link to this one.
    pub fn create() -> NetNs {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // A /30 per namespace in 10.64.0.0/10, from the process id and a counter, so test binaries
        // running at once do not collide.
        let block = ((pid & 0x3FFF) << 4 | (n & 0xF)) << 2;
        let base = u32::from(Ipv4Addr::new(10, 64, 0, 0)) | (block & 0x003F_FFFC);
        let host_ip = Ipv4Addr::from(base + 1);
        let ns_ip = Ipv4Addr::from(base + 2);
        let name = format!("rmqt{pid}n{n}");
        let host_if = format!("rq{pid}h{n}");
        let peer_if = format!("rq{pid}p{n}");
        let steps: Vec<Vec<String>> = vec![
            vec!["ip".into(), "netns".into(), "add".into(), name.clone()],
            vec![
                "ip".into(),
                "link".into(),
                "add".into(),
                host_if.clone(),
                "type".into(),
                "veth".into(),
                "peer".into(),
                "name".into(),
                peer_if.clone(),
            ],
            vec![
                "ip".into(),
                "link".into(),
                "set".into(),
                peer_if.clone(),
                "netns".into(),
                name.clone(),
            ],
            vec![
                "ip".into(),
                "addr".into(),
                "add".into(),
                format!("{host_ip}/30"),
                "dev".into(),
                host_if.clone(),
            ],
            vec![
                "ip".into(),
                "link".into(),
                "set".into(),
                host_if.clone(),
                "up".into(),
            ],
            vec![
                "ip".into(),
                "netns".into(),
                "exec".into(),
                name.clone(),
                "ip".into(),
                "addr".into(),
                "add".into(),
                format!("{ns_ip}/30"),
                "dev".into(),
                peer_if.clone(),
            ],
            vec![
                "ip".into(),
                "netns".into(),
                "exec".into(),
                name.clone(),
                "ip".into(),
                "link".into(),
                "set".into(),
                peer_if.clone(),
                "up".into(),
            ],
            vec![
                "ip".into(),
                "netns".into(),
                "exec".into(),
                name.clone(),
                "ip".into(),
                "link".into(),
                "set".into(),
                "lo".into(),
                "up".into(),
            ],
        ];
        let ns = NetNs {
            name,
            host_if,
            host_ip,
            ns_ip,
        };
        for step in steps {
            let args: Vec<&str> = step.iter().map(String::as_str).collect();
            if let Err(e) = run(&args) {
                panic!("cannot make the test's network namespace: {e}");
            }
        }
        ns
    }

    fn exec(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }

    /// Drops `percent` of the packets entering and leaving the namespace (replacing earlier rules).
    pub fn set_loss(&self, percent: u32) {
        self.clear_loss();
        // numgen's range is 0-99: 100% is a plain drop (a partition).
        let matcher = if percent >= 100 {
            String::new()
        } else {
            format!("numgen random mod 100 < {percent} ")
        };
        let rules = format!(
            "table inet {TABLE} {{\n\
             chain input {{ type filter hook input priority 0; {matcher}counter drop; }}\n\
             chain output {{ type filter hook output priority 0; {matcher}counter drop; }}\n\
             }}\n"
        );
        let file = std::env::temp_dir().join(format!("{}.nft", self.name));
        std::fs::write(&file, rules).expect("write nft rules");
        let path = file.to_string_lossy().into_owned();
        let result = self.exec(&["nft", "-f", &path]);
        let _ = std::fs::remove_file(&file);
        if let Err(e) = result {
            panic!("cannot add the loss rules: {e}");
        }
    }

    /// Packets the loss rules dropped so far (0 without rules).
    pub fn dropped_packets(&self) -> u64 {
        let Ok(text) = self.exec(&["nft", "list", "table", "inet", TABLE]) else {
            return 0;
        };
        // "counter packets N bytes M" once per chain.
        text.split("counter packets ")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }

    /// Removes the loss rules.
    pub fn clear_loss(&self) {
        let _ = self.exec(&["nft", "delete", "table", "inet", TABLE]);
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = run(&["ip", "link", "del", &self.host_if]);
        let _ = run(&["ip", "netns", "del", &self.name]);
    }
}
