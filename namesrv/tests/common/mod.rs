//! Test support: start the real `namesrv` binary on a free loopback port, talk to it, stop it.

#![allow(dead_code)] // each test file uses a different part of this module

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use protocol::body::{RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper};
use protocol::header::{CommandHeader, RegisterBrokerRequestHeader};
use protocol::{request_code, RemotingCommand};
use remoting::Client;

pub const TIMEOUT: Duration = Duration::from_secs(5);

/// A running `namesrv` process; killed when dropped.
pub struct NameServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
}

impl NameServerProcess {
    /// Starts the binary on 127.0.0.1 port 0 with extra arguments, and reads the bound address
    /// from its first stdout line.
    pub fn start(extra_args: &[&str]) -> NameServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_namesrv"))
            .args(["--listen", "127.0.0.1:0"])
            .args(extra_args)
            .env(
                "RUST_LOG",
                std::env::var("NAMESRV_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn namesrv");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read namesrv stdout");
        let addr = line
            .trim()
            .strip_prefix("namesrv listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from namesrv: {line:?}"))
            .parse()
            .expect("address");
        NameServerProcess { child, addr }
    }

    /// Waits up to `limit` for the process to exit; `None` if it did not.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for NameServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `f` on a fresh glommio executor and waits for it.
pub fn run_local<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .spawn(f)
        .expect("executor")
        .join()
        .expect("test executor panicked");
}

pub async fn connect(addr: SocketAddr) -> Client {
    Client::connect(addr, TIMEOUT)
        .await
        .expect("connect to namesrv")
}

pub async fn invoke(client: &Client, cmd: RemotingCommand) -> RemotingCommand {
    client.invoke(cmd, TIMEOUT).await.expect("namesrv answers")
}

/// A broker's topic table with `counter` as its data version.
pub fn topic_table(topics: &[(&str, i32)], counter: i64) -> TopicConfigSerializeWrapper {
    let mut wrapper = TopicConfigSerializeWrapper::default();
    for (name, queues) in topics {
        wrapper
            .topic_config_table
            .insert((*name).to_owned(), TopicConfig::new(*name, *queues));
    }
    wrapper.data_version.counter = counter;
    wrapper.data_version.timestamp = 1_700_000_000_000;
    wrapper
}

/// One broker's identity for REGISTER_BROKER.
pub struct BrokerIdentity<'a> {
    pub cluster: &'a str,
    pub name: &'a str,
    pub addr: &'a str,
    pub id: i64,
    pub ha_addr: &'a str,
}

/// A REGISTER_BROKER request like a Java broker sends (body CRC set, not compressed).
pub fn register_request(
    broker: &BrokerIdentity<'_>,
    topics: TopicConfigSerializeWrapper,
) -> RemotingCommand {
    let body = protocol::body::to_json(&RegisterBrokerBody {
        topic_config_serialize_wrapper: topics,
        filter_server_list: Vec::new(),
    });
    let crc = i32::try_from(crc32fast::hash(&body) & 0x7FFF_FFFF).expect("31-bit crc");
    let header = RegisterBrokerRequestHeader {
        broker_name: broker.name.to_owned(),
        broker_addr: broker.addr.to_owned(),
        cluster_name: broker.cluster.to_owned(),
        ha_server_addr: broker.ha_addr.to_owned(),
        broker_id: broker.id,
        heartbeat_timeout_millis: None,
        enable_acting_master: None,
        compressed: Some(false),
        body_crc32: Some(crc),
    };
    RemotingCommand::request(request_code::REGISTER_BROKER)
        .with_ext_fields(header.to_ext_fields())
        .with_body(body)
}

pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

/// The response body as JSON.
pub fn body_json(response: &RemotingCommand) -> serde_json::Value {
    serde_json::from_slice(&response.body).unwrap_or_else(|e| {
        panic!(
            "response body is not JSON ({e}): {:?}",
            String::from_utf8_lossy(&response.body)
        )
    })
}

/// Broker names in GET_BROKER_CLUSTER_INFO's brokerAddrTable.
pub async fn registered_broker_names(client: &Client) -> Vec<String> {
    let response = invoke(
        client,
        RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO),
    )
    .await;
    assert_eq!(response.code, 0, "cluster info: {:?}", response.remark);
    let json = body_json(&response);
    json["brokerAddrTable"]
        .as_object()
        .expect("brokerAddrTable object")
        .keys()
        .cloned()
        .collect()
}

/// Polls `check` every 50 ms until it is true or `limit` passes; returns the last result.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        glommio::timer::sleep(Duration::from_millis(50)).await;
    }
}

/// A plain blocking socket speaking the remoting protocol (closing it is under the test's control).
pub struct RawConnection {
    pub stream: TcpStream,
    buffer: BytesMut,
}

impl RawConnection {
    pub fn connect(addr: SocketAddr) -> RawConnection {
        let stream = TcpStream::connect_timeout(&addr, TIMEOUT).expect("raw connect");
        stream
            .set_read_timeout(Some(TIMEOUT))
            .expect("read timeout");
        RawConnection {
            stream,
            buffer: BytesMut::new(),
        }
    }

    pub fn send(&mut self, cmd: &RemotingCommand) {
        let mut out = BytesMut::new();
        protocol::encode_frame(cmd, &mut out).expect("encode");
        self.stream.write_all(&out).expect("write");
    }

    /// Reads one command; `None` when the server closed the connection.
    pub fn receive(&mut self) -> Option<RemotingCommand> {
        loop {
            if let Some(cmd) =
                protocol::decode_frame(&mut self.buffer).expect("valid frame from namesrv")
            {
                return Some(cmd);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self
                    .buffer
                    .extend_from_slice(chunk.get(..n).expect("read within chunk")),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                // glommio's executor thread gets signals; a blocking read may be interrupted.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("raw read failed: {e}"),
            }
        }
    }

    pub fn invoke(&mut self, cmd: RemotingCommand) -> RemotingCommand {
        self.send(&cmd.with_opaque(77));
        let response = self.receive().expect("namesrv answered");
        assert_eq!(response.opaque, 77);
        response
    }
}
