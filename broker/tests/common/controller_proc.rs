//! One controller for a controller-mode test, in a child process: the test binary runs itself again
//! as the controller (an ignored helper test whose body is `serve_controller_if_asked`), a raft group
//! of one in its own temp dir, its log kept there, killed on drop.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use std::net::{Ipv4Addr, SocketAddr};

use super::{free_port, namesrv_config, run_local, start_namesrv_in_process_with, Broker};

const CONF_ENV: &str = "TEST_CONTROLLER_PROC_CONF";

/// The body of the binary's helper test: when started by [`ControllerProc::start`], runs the
/// controller and exits; as an ordinary (ignored) test, returns at once.
pub fn serve_controller_if_asked() {
    let Ok(path) = std::env::var(CONF_ENV) else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("controller config");
    let config = controller::config::ControllerConfig::from_file_text(&text).expect("config");
    if let Err(e) = controller::server::run(config, |addr| println!("controller on {addr}")) {
        eprintln!("controller: {e}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

pub struct ControllerProc {
    pub addr: String,
    child: Child,
    dir: tempfile::TempDir,
}

impl ControllerProc {
    /// Starts the controller by running `helper_test`, this binary's helper test.
    pub fn start(helper_test: &str) -> ControllerProc {
        let dir = tempfile::tempdir().unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let conf = dir.path().join("controller.conf");
        std::fs::write(
            &conf,
            format!(
                "controllerDLegerGroup = test\ncontrollerDLegerPeers = n0-{addr}\n\
                 controllerDLegerSelfId = n0\ncontrollerStorePath = {}\n",
                dir.path().join("store").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("controller.log")).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([helper_test, "--exact", "--ignored", "--nocapture"])
            .env(CONF_ENV, &conf)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        ControllerProc { addr, child, dir }
    }

    /// A controller-mode group of two replicas: a name server in this process, broker a (the
    /// group's first replica, so its master), then broker b, both in the SyncStateSet of `group`
    /// when this returns. SYNC_FLUSH, `allAckInSyncStateSet`, a 3 s controller heartbeat timeout,
    /// plus the config lines `more`. Answers (a, a's address, b, b's address).
    pub fn start_pair(&self, group: &str, more: &str) -> (Broker, String, Broker, String) {
        let namesrv = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
        start_namesrv_in_process_with(namesrv_config(namesrv));
        let extra = format!(
            "enableControllerMode = true\ncontrollerAddr = \"{}\"\nnamesrvAddr = \"{namesrv}\"\n\
             flushDiskType = \"SYNC_FLUSH\"\nallAckInSyncStateSet = true\nregisterNameServerPeriod = 1000\n\
             syncFlushTimeout = 2000\nbrokerIP1 = \"127.0.0.1\"\ncontrollerHeartBeatTimeoutMills = 3000\n{more}",
            self.addr
        );
        let a = Broker::builder().extra(&extra).start();
        let a_addr = format!("127.0.0.1:{}", a.port);
        self.wait_for(group, &[&a], "broker a to be master", |(m, _)| *m == a_addr);
        let b = Broker::builder().extra(&extra).start();
        let b_addr = format!("127.0.0.1:{}", b.port);
        self.wait_for(group, &[&a, &b], "2 replicas in sync", |(_, s)| {
            s.len() == 2
        });
        (a, a_addr, b, b_addr)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("controller.log")).unwrap_or_default()
    }

    /// The controller process's id (to pause it with SIGSTOP).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// CONTROLLER_GET_REPLICA_INFO for `broker_name` on a fresh connection: the SUCCESS answer
    /// (master address and epoch in its fields, the SyncStateSet in its body), or None.
    pub fn replica_info(&self, broker_name: &str) -> Option<RemotingCommand> {
        let addr = self.addr.clone();
        let request = RemotingCommand::request(request_code::CONTROLLER_GET_REPLICA_INFO)
            .with_ext("brokerName", broker_name);
        run_local(async move {
            let c = Client::connect_str(&addr, Duration::from_secs(2))
                .await
                .ok()?;
            let resp = c.invoke(request, Duration::from_secs(2)).await.ok()?;
            (resp.code == response_code::SUCCESS).then_some(resp)
        })
    }

    /// The SyncStateSet in a [`Self::replica_info`] answer.
    pub fn sync_state_set(info: &RemotingCommand) -> Option<Vec<u64>> {
        let body: serde_json::Value = serde_json::from_slice(&info.body).ok()?;
        body["syncStateSet"]
            .as_array()
            .map(|ids| ids.iter().filter_map(|v| v.as_u64()).collect())
    }

    /// `broker_name`'s master address and SyncStateSet, as the controller says now.
    pub fn master_and_set(&self, broker_name: &str) -> Option<(String, BTreeSet<u64>)> {
        let resp = self.replica_info(broker_name)?;
        let set = Self::sync_state_set(&resp)?.into_iter().collect();
        Some((resp.ext("masterAddress")?.to_owned(), set))
    }

    /// Waits (60 s at most) until `probe` accepts [`Self::master_and_set`]; otherwise prints the
    /// brokers' logs and panics naming `what`.
    pub fn wait_for(
        &self,
        broker_name: &str,
        brokers: &[&Broker],
        what: &str,
        probe: impl Fn(&(String, BTreeSet<u64>)) -> bool,
    ) {
        let mut last = None;
        self.wait_until(what, brokers, || {
            last = self.master_and_set(broker_name);
            last.as_ref().is_some_and(&probe).then_some(())
        });
    }

    /// Waits (60 s at most) until `probe` gives a value; otherwise prints the brokers' and this
    /// controller's logs and panics naming `what`.
    pub fn wait_until<T>(
        &self,
        what: &str,
        brokers: &[&Broker],
        mut probe: impl FnMut() -> Option<T>,
    ) -> T {
        const LIMIT: Duration = Duration::from_secs(60);
        let start = Instant::now();
        loop {
            if let Some(v) = probe() {
                return v;
            }
            if start.elapsed() > LIMIT {
                for b in brokers {
                    println!("---- broker {}:\n{}", b.addr(), b.log());
                }
                println!("---- controller:\n{}", self.log());
                panic!("{what}: not within {LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ControllerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
