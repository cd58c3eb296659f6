//! The web console in a real browser: a name server and a broker of this project (two shard-brokers,
//! plain ACL on, metrics endpoint) in child processes on free loopback ports with a temp store, a
//! client that sends messages with keys and a group that consumes about half of them (and a trickle
//! of load for the charts), the `console` binary, then `tests/browser/check.mjs` driving Debian's
//! Chromium through playwright-core: it checks the brokers, topic offsets, group lag, a message found
//! by key and by id, the live charts, admin actions refused without login / with a wrong secret / for
//! a non-admin account and done by an admin, a drain and its undo; screenshots go to the output dir.
//!
//! Needs Chromium and node with the script's packages: `scripts/console-browser-test.sh` installs them
//! and runs this test (it is `#[ignore]`d in a plain `cargo test`).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use client::acl::{AclRpcHook, Credentials};
use client::pull::{PullOptions, PullStatus};
use client::{BrokerConnections, Message, NameServer, Producer, ProducerConfig, PullConsumer};
use mqadmin::admin::Admin;
use serde_json::json;

const TOPIC: &str = "ConsoleTopic";
const LOAD_TOPIC: &str = "ConsoleLoad";
const GROUP: &str = "ConsoleGroup";
const NEW_TOPIC: &str = "ConsoleCreated";
const SENT: usize = 40;
const TIMEOUT: Duration = Duration::from_secs(10);

fn creds(ak: &str, sk: &str) -> Credentials {
    Credentials {
        access_key: ak.into(),
        secret_key: sk.into(),
    }
}

fn admin_creds() -> Credentials {
    creds("opsAdmin", "ops-secret-1")
}
fn reader_creds() -> Credentials {
    creds("consoleReader", "reader-secret-1")
}
fn app_creds() -> Credentials {
    creds("app", "app-secret-1")
}

const ACL: &str = "accounts:
  - accessKey: consoleReader
    secretKey: reader-secret-1
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: app
    secretKey: app-secret-1
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: opsAdmin
    secretKey: ops-secret-1
    admin: true
";

/// Where cargo put this build's binaries (target/<profile>).
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    for bin in ["broker", "namesrv"] {
        assert!(
            dir.join(bin).is_file(),
            "{} is missing: `cargo build -p broker -p namesrv` first",
            dir.join(bin).display()
        );
    }
    dir
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A broker listen port whose shard-broker, fast and HA neighbours (port-2 ..= port+6) are free.
fn free_broker_port() -> u16 {
    let mut x = u64::from(std::process::id()).wrapping_mul(2_654_435_761)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(7, |d| u64::from(d.subsec_nanos()));
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let port = 21_000 + (x % 30_000) as u16;
        if (port - 2..=port + 6).all(port_free) {
            return port;
        }
    }
    panic!("no free broker port range");
}

/// Child processes, SIGKILLed on drop.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn spawn(procs: &mut Procs, cmd: &mut Command, log: &Path) {
    let file = std::fs::File::create(log).unwrap();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    procs.0.push(child);
}

fn wait_for_log(log: &Path, text: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let mut content = String::new();
        if let Ok(mut f) = std::fs::File::open(log) {
            let _ = f.read_to_string(&mut content);
        }
        if content.contains(text) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{} has no `{text}` after {limit:?}:\n{content}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_listening(port: u16, limit: Duration) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < limit, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the client side sent and consumed, for the browser checks.
struct Sent {
    /// Messages per (brokerName, queueId), i.e. each queue's max offset.
    per_queue: BTreeMap<(String, i32), i64>,
    consumed: i64,
    /// (msgId, body) of one message.
    one: (String, String),
}

async fn wait_route(ns: &NameServer, topic: &str, brokers: usize) {
    let start = Instant::now();
    loop {
        if let Ok(route) = ns.topic_route(topic).await {
            if route.queue_datas.len() >= brokers {
                return;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "no route for {topic}"
        );
        glommio::timer::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates the topics, sends, consumes about half of each queue, reports, then keeps a trickle of
/// sends and pulls on the load topic (and the group's heartbeat) until `stop`.
async fn client_side(namesrv: String, report: mpsc::Sender<Sent>, stop: Arc<AtomicBool>) {
    let admin = Admin::new(&namesrv, TIMEOUT)
        .unwrap()
        .with_credentials(Some(admin_creds()));
    let masters: Vec<String> = admin
        .masters(None)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    for topic in [TOPIC, LOAD_TOPIC] {
        let spec = mqadmin::topic_cmds::TopicSpec {
            topic,
            read_queues: 4,
            write_queues: 4,
            perm: 6,
            order: false,
            attributes: None,
        };
        mqadmin::topic_cmds::update_topic(&admin, masters.clone(), spec)
            .await
            .unwrap();
    }
    let ns = NameServer::from_list(&namesrv, TIMEOUT).unwrap();
    wait_route(&ns, TOPIC, masters.len()).await;
    wait_route(&ns, LOAD_TOPIC, masters.len()).await;

    let hook = Rc::new(AclRpcHook {
        credentials: app_creds(),
    });
    let producer = Producer::new(
        NameServer::from_list(&namesrv, TIMEOUT).unwrap(),
        ProducerConfig {
            send_timeout: TIMEOUT,
            ..ProducerConfig::default()
        },
    );
    producer.connections().set_rpc_hook(Some(hook.clone()));
    let mut per_queue = BTreeMap::new();
    let mut one = None;
    for i in 0..SENT {
        let body = format!("console body {i}");
        let msg = Message::new(TOPIC, body.clone().into_bytes())
            .with_keys(&format!("order-{i}"))
            .with_tags("TagA");
        let result = producer.send(&msg).await.unwrap();
        *per_queue
            .entry((result.queue.broker_name.clone(), result.queue.queue_id))
            .or_insert(0i64) += 1;
        if i == 11 {
            one = Some((result.msg_id.clone(), body));
        }
    }

    let connections = BrokerConnections::new(1, TIMEOUT);
    connections.set_rpc_hook(Some(hook.clone()));
    let consumer = PullConsumer::new(
        GROUP,
        NameServer::from_list(&namesrv, TIMEOUT).unwrap(),
        connections,
        TIMEOUT,
    );
    consumer
        .heartbeat(TOPIC, "127.0.0.1@console-test")
        .await
        .unwrap();
    let mut consumed = 0i64;
    for queue in consumer.queues(TOPIC).await.unwrap() {
        let stored = per_queue
            .get(&(queue.broker_name.clone(), queue.queue_id))
            .copied()
            .unwrap_or(0);
        let take = stored / 2;
        if take == 0 {
            continue;
        }
        let options = PullOptions {
            max_msg_nums: i32::try_from(take).unwrap(),
            ..PullOptions::default()
        };
        let result = consumer.pull(&queue, 0, &options).await.unwrap();
        assert_eq!(result.status, PullStatus::Found, "{queue:?}");
        let got = result.records().count() as i64;
        assert_eq!(got, take, "{queue:?}");
        consumer.commit_offset(&queue, take, false).await.unwrap();
        consumed += take;
    }
    report
        .send(Sent {
            per_queue,
            consumed,
            one: one.unwrap(),
        })
        .unwrap();

    // A trickle of load for the charts (another group, so the checked lag stays put).
    let load_connections = BrokerConnections::new(1, TIMEOUT);
    load_connections.set_rpc_hook(Some(hook));
    let loader = PullConsumer::new(
        "ConsoleLoadGroup",
        NameServer::from_list(&namesrv, TIMEOUT).unwrap(),
        load_connections,
        TIMEOUT,
    );
    let load_queues = loader.queues(LOAD_TOPIC).await.unwrap();
    let mut offsets = vec![0i64; load_queues.len()];
    let mut last_heartbeat = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        for i in 0..4 {
            let msg = Message::new(LOAD_TOPIC, format!("load {i}").into_bytes());
            let _ = producer.send(&msg).await;
        }
        for (queue, offset) in load_queues.iter().zip(offsets.iter_mut()) {
            if let Ok(r) = loader.pull(queue, *offset, &PullOptions::default()).await {
                if r.status == PullStatus::Found {
                    *offset = r.next_begin_offset;
                }
            }
        }
        if last_heartbeat.elapsed() > Duration::from_secs(10) {
            let _ = consumer.heartbeat(TOPIC, "127.0.0.1@console-test").await;
            last_heartbeat = Instant::now();
        }
        glommio::timer::sleep(Duration::from_millis(100)).await;
    }
}

fn run_local<T>(fut: impl std::future::Future<Output = T>) -> T {
    glommio::LocalExecutorBuilder::default()
        .make()
        .unwrap()
        .run(fut)
}

#[test]
#[ignore = "needs Chromium and node packages: run scripts/console-browser-test.sh"]
fn console_pages_in_chromium() {
    let script_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        script_dir.join("node_modules/playwright-core").is_dir(),
        "run `npm ci` in {} first (scripts/console-browser-test.sh does)",
        script_dir.display()
    );
    let bins = bin_dir();
    let out = std::env::var_os("CONSOLE_TEST_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| bins.join("console-browser"));
    std::fs::create_dir_all(&out).unwrap();
    // Only this run's screenshots are counted below.
    for entry in std::fs::read_dir(&out).unwrap().filter_map(Result::ok) {
        if entry.path().extension().is_some_and(|x| x == "png") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let mut procs = Procs(Vec::new());

    let ns_port = free_port();
    let namesrv = format!("127.0.0.1:{ns_port}");
    spawn(
        &mut procs,
        Command::new(bins.join("namesrv")).args(["--listen", &namesrv]),
        &dir.join("namesrv.log"),
    );
    wait_for_log(
        &dir.join("namesrv.log"),
        "namesrv listening on",
        Duration::from_secs(30),
    );

    let port = free_broker_port();
    let metrics_port = free_port();
    std::fs::write(dir.join("plain_acl.yml"), ACL).unwrap();
    let config = format!(
        "brokerName = \"broker-c\"\nbrokerClusterName = \"ConsoleCluster\"\nbrokerIP1 = \"127.0.0.1\"\n\
         listenPort = {port}\nnamesrvAddr = \"{namesrv}\"\nstorePathRootDir = \"{}\"\nshardCount = 2\n\
         mappedFileSizeCommitLog = 4194304\nmaxMessageSize = 1048576\nmetricsPort = {metrics_port}\naclEnable = true\n\
         aclFile = \"{}\"\n",
        dir.join("store").display(),
        dir.join("plain_acl.yml").display()
    );
    std::fs::write(dir.join("broker.toml"), config).unwrap();
    spawn(
        &mut procs,
        Command::new(bins.join("broker"))
            .arg("--config")
            .arg(dir.join("broker.toml")),
        &dir.join("broker.log"),
    );
    wait_for_log(
        &dir.join("broker.log"),
        "boot success",
        Duration::from_secs(60),
    );
    // Both shard-brokers registered.
    run_local({
        let namesrv = namesrv.clone();
        async move {
            let ns = NameServer::from_list(&namesrv, TIMEOUT).unwrap();
            let start = Instant::now();
            loop {
                if ns
                    .cluster_info()
                    .await
                    .is_ok_and(|c| c.broker_addr_table.len() == 2)
                {
                    return;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(40),
                    "brokers did not register"
                );
                glommio::timer::sleep(Duration::from_millis(200)).await;
            }
        }
    });

    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let client_thread = std::thread::spawn({
        let (namesrv, stop) = (namesrv.clone(), stop.clone());
        move || run_local(client_side(namesrv, tx, stop))
    });
    let sent = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the client side did not finish sending and consuming");
    assert_eq!(sent.per_queue.values().sum::<i64>(), SENT as i64);

    let console_port = free_port();
    let reader = reader_creds();
    spawn(
        &mut procs,
        Command::new(env!("CARGO_BIN_EXE_console"))
            .args([
                "-n",
                &namesrv,
                "--listen",
                &format!("127.0.0.1:{console_port}"),
            ])
            .args([
                "--accessKey",
                &reader.access_key,
                "--secretKey",
                &reader.secret_key,
            ])
            .arg("--enableAdmin"),
        &dir.join("console.log"),
    );
    wait_listening(console_port, Duration::from_secs(30));

    let admin = admin_creds();
    let expect = json!({
        "brokers": ["broker-c-0", "broker-c-1"],
        "process": "broker-c",
        "topic": TOPIC,
        "sent": SENT,
        "queues": sent.per_queue.iter().map(|((b, q), n)| json!({"brokerName": b, "queueId": q, "maxOffset": n})).collect::<Vec<_>>(),
        "group": GROUP,
        "lag": SENT as i64 - sent.consumed,
        "key": "order-7",
        "keyBody": "console body 7",
        "msgId": sent.one.0,
        "msgIdBody": sent.one.1,
        "newTopic": NEW_TOPIC,
        "admin": {"accessKey": admin.access_key, "secretKey": admin.secret_key},
        "reader": {"accessKey": reader.access_key, "secretKey": reader.secret_key},
    });
    let expect_path = dir.join("expect.json");
    std::fs::write(&expect_path, expect.to_string()).unwrap();

    let mut node = Command::new("node");
    node.arg(script_dir.join("check.mjs"))
        .current_dir(&script_dir)
        .env("CONSOLE_URL", format!("http://127.0.0.1:{console_port}"))
        .env("EXPECT", &expect_path)
        .env("OUT_DIR", &out)
        .stdin(Stdio::null());
    let mut child = node.stdout(Stdio::piped()).spawn().expect("node");
    let mut stdout = child.stdout.take().unwrap();
    let reader_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(240) {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = reader_thread.join().unwrap();
    println!("{text}");
    stop.store(true, Ordering::Relaxed);
    client_thread.join().unwrap();
    assert!(
        status.success(),
        "browser checks failed ({status}); console log:\n{}",
        std::fs::read_to_string(dir.join("console.log")).unwrap_or_default()
    );

    // What the admin did reached the cluster, seen without the console.
    run_local(async move {
        let ns = NameServer::from_list(&namesrv, TIMEOUT).unwrap();
        wait_route(&ns, NEW_TOPIC, 2).await;
        let route = ns.topic_route(NEW_TOPIC).await.unwrap();
        assert!(route.queue_datas.iter().all(|q| q.write_queue_nums == 2));
        let admin = Admin::new(&namesrv, TIMEOUT)
            .unwrap()
            .with_credentials(Some(admin_creds()));
        let (_, addr) = admin.masters(None).await.unwrap().remove(0);
        let config = console::api::broker_config(&admin, &addr).await.unwrap();
        assert_eq!(
            config.get("brokerPermission").map(String::as_str),
            Some("6")
        );
    });
    let shots: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
        .collect();
    assert!(shots.len() >= 8, "screenshots in {}", out.display());
    println!("screenshots in {}", out.display());
}
