//! Commands that send and read messages as a client does: sendMessage (one message, to a chosen
//! queue or the next one), consumeMessage and printMsg (pull a topic's queues from an offset or a
//! time and print the messages), clusterRT (send to every broker's own topic and time it).

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use client::pull::{PullOptions, PullStatus};
use client::{
    BrokerConnections, ClientError, Message, MessageQueue, NameServer, Producer, ProducerConfig,
    PullConsumer,
};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::consumer_cmds::parse_timestamp;
use crate::message_cmds::{message_json, properties_text, TOOLS_CONSUMER};
use crate::shared_args::Namesrv;
use crate::table::{cell, Report, Table};

#[derive(Debug, Subcommand)]
pub enum SendConsumeCommand {
    /// Send one message (to a chosen queue with -b and -i).
    #[command(name = "sendMessage")]
    SendMessage(SendMessageArgs),
    /// Pull messages of a topic (a queue with -b -i, from an offset with -o, between times with
    /// -s/-e) and print them.
    #[command(name = "consumeMessage")]
    ConsumeMessage(ConsumeMessageArgs),
    /// Print every message of a topic (between times with -b/-e, matching a tag expression with -s).
    #[command(name = "printMsg")]
    PrintMsg(PrintMsgArgs),
    /// Send messages to every broker of a cluster (its own topic) and print the round-trip time.
    #[command(name = "clusterRT")]
    ClusterRt(ClusterRtArgs),
}

#[derive(Debug, Args)]
pub struct SendMessageArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// The body (UTF-8 text)
    #[arg(short = 'p', long = "body")]
    pub body: String,
    #[arg(short = 'k', long = "key")]
    pub keys: Option<String>,
    #[arg(short = 'c', long = "tags")]
    pub tags: Option<String>,
    /// Broker name of the queue to send to (with -i)
    #[arg(short = 'b', long = "broker")]
    pub broker_name: Option<String>,
    /// Queue id to send to (with -b)
    #[arg(short = 'i', long = "qid", requires = "broker_name")]
    pub queue_id: Option<i32>,
}

#[derive(Debug, Args)]
pub struct ConsumeMessageArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Only queues of this broker
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: Option<String>,
    /// Only this queue (with -b)
    #[arg(short = 'i', long = "queueId", requires = "broker_name")]
    pub queue_id: Option<i32>,
    /// Start at this offset (with -i)
    #[arg(short = 'o', long = "offset", requires = "queue_id")]
    pub offset: Option<i64>,
    /// Pull as this consumer group
    #[arg(short = 'g', long = "consumerGroup", default_value = TOOLS_CONSUMER)]
    pub group: String,
    /// From the first message stored at or after: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
    #[arg(short = 's', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// Up to the first message stored at or after: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Most messages to print
    #[arg(short = 'c', long = "MessageNumber", default_value_t = 128)]
    pub count: i64,
}

#[derive(Debug, Args)]
pub struct PrintMsgArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Charset of the bodies (UTF-8 only)
    #[arg(short = 'c', long = "charsetName", default_value = "UTF-8")]
    pub charset: String,
    /// Tag expression, e.g. "TagA || TagB"
    #[arg(short = 's', long = "subExpression", default_value = "*")]
    pub sub_expression: String,
    /// From the first message stored at or after: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
    #[arg(short = 'b', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// Up to the first message stored at or after: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Print the bodies
    #[arg(short = 'd', long = "printBody", default_value_t = true, action = clap::ArgAction::Set)]
    pub print_body: bool,
}

#[derive(Debug, Args)]
pub struct ClusterRtArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Messages sent to each broker
    #[arg(short = 'a', long = "amount", default_value_t = 100)]
    pub amount: u32,
    /// Body size in bytes
    #[arg(short = 's', long = "size", default_value_t = 128)]
    pub size: usize,
    /// Only this cluster
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
    /// Print `time|room|cluster|broker|rt` lines instead of the table
    #[arg(short = 'p', long = "printAsTlog", default_value_t = false, action = clap::ArgAction::Set)]
    pub print_as_tlog: bool,
    /// Machine room name printed with -p true
    #[arg(short = 'm', long = "machineRoom", default_value = "noname")]
    pub machine_room: String,
    /// Repeat every this many seconds until stopped (default: one round)
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<u64>,
}

pub async fn run(command: SendConsumeCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        SendConsumeCommand::SendMessage(args) => send_message(args, timeout).await,
        SendConsumeCommand::ConsumeMessage(args) => consume_message(args, timeout).await,
        SendConsumeCommand::PrintMsg(args) => print_msg(args, timeout).await,
        SendConsumeCommand::ClusterRt(args) => cluster_rt(args, timeout).await,
    }
}

fn now_ms() -> i64 {
    client::uniq_key::now_millis()
}

/// A producer whose group is the time, as RocketMQ's tools name theirs.
fn tool_producer(namesrv: &str, timeout: Duration) -> Result<Producer, ClientError> {
    let ns = NameServer::from_list(namesrv, timeout)?;
    Ok(Producer::new(
        ns,
        ProducerConfig {
            group: now_ms().to_string(),
            send_timeout: timeout,
            connect_timeout: timeout,
            ..ProducerConfig::default()
        },
    ))
}

async fn send_message(args: SendMessageArgs, timeout: Duration) -> Result<Report, ClientError> {
    let producer = tool_producer(&args.ns.namesrv, timeout)?;
    let topic = args.topic.trim();
    let mut msg = Message::new(topic, args.body.clone().into_bytes());
    if let Some(tags) = args.tags.as_deref().filter(|t| !t.is_empty()) {
        msg = msg.with_tags(tags);
    }
    if let Some(keys) = args.keys.as_deref().filter(|k| !k.is_empty()) {
        msg = msg.with_keys(keys);
    }
    let result = match (&args.broker_name, args.queue_id) {
        (Some(broker_name), Some(queue_id)) => {
            let queue = MessageQueue {
                topic: topic.to_owned(),
                broker_name: broker_name.trim().to_owned(),
                queue_id,
            };
            producer.send_to_queue(&msg, &queue).await?
        }
        _ => {
            // Each run is a new producer: as the Java client's random first index, start anywhere
            // so that repeated runs spread over the queues.
            let route = producer.route(topic).await?;
            let start = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() as usize)
                ^ std::process::id() as usize;
            let queue = route.select_write_queue(start)?.clone();
            producer.send_to_queue(&msg, &queue).await?
        }
    };
    let mut table = Table::new(&["Broker Name", "QID", "Send Result", "MsgId"]);
    table.row(vec![
        result.queue.broker_name.clone(),
        result.queue.queue_id.to_string(),
        "SEND_OK".into(),
        result.msg_id.clone(),
    ]);
    Ok(Report::new(
        table,
        json!({
            "brokerName": result.queue.broker_name, "queueId": result.queue.queue_id,
            "sendStatus": "SEND_OK", "msgId": result.msg_id, "offsetMsgId": result.offset_msg_id,
            "queueOffset": result.queue_offset,
        }),
    ))
}

/// `MessageQueue [topic=T, brokerName=b, queueId=0]`, as Java prints one.
pub(crate) fn queue_text(q: &MessageQueue) -> String {
    format!(
        "MessageQueue [topic={}, brokerName={}, queueId={}]",
        q.topic, q.broker_name, q.queue_id
    )
}

/// One message as RocketMQ's printMsg / consumeMessage print it: `MSGID: id MessageExt [...] BODY: b`.
pub(crate) fn message_line(m: &Value, broker_name: &str, print_body: bool) -> String {
    let s = |k: &str| cell(m.get(k));
    let body = if print_body {
        s("body")
    } else {
        "NOT PRINT BODY".to_owned()
    };
    format!(
        "MSGID: {} MessageExt [brokerName={broker_name}, queueId={}, storeSize={}, queueOffset={}, \
         sysFlag={}, bornTimestamp={}, bornHost=/{}, storeTimestamp={}, storeHost=/{}, msgId={}, \
         commitLogOffset={}, bodyCRC={}, reconsumeTimes={}, preparedTransactionOffset={}, \
         toString()=Message{{topic='{}', flag={}, properties={}, transactionId='null'}}] BODY: {body}",
        s("msgId"),
        s("queueId"),
        s("storeSize"),
        s("queueOffset"),
        s("sysFlag"),
        s("bornTimestamp"),
        s("bornHost"),
        s("storeTimestamp"),
        s("storeHost"),
        s("offsetMsgId"),
        s("commitLogOffset"),
        s("bodyCRC"),
        s("reconsumeTimes"),
        s("preparedTransactionOffset"),
        s("topic"),
        s("flag"),
        properties_text(m),
    )
}

/// Pulls and prints the messages of a topic's queues.
struct Reader {
    admin: Admin,
    consumer: PullConsumer,
    lines: Vec<String>,
    messages: Vec<Value>,
}

impl Reader {
    fn new(namesrv: &str, group: &str, timeout: Duration) -> Result<Reader, ClientError> {
        let ns = NameServer::from_list(namesrv, timeout)?;
        Ok(Reader {
            admin: Admin::new(namesrv, timeout)?,
            consumer: PullConsumer::new(group, ns, BrokerConnections::new(1, timeout), timeout),
            lines: Vec::new(),
            messages: Vec::new(),
        })
    }

    /// The queue's offset for a time, or `default` without one.
    async fn offset_at(
        &self,
        q: &MessageQueue,
        time: Option<i64>,
        default: i64,
    ) -> Result<i64, ClientError> {
        let Some(ts) = time else {
            return Ok(default);
        };
        let route = self.consumer.route(&q.topic).await?;
        let addr = route.master_addr(&q.broker_name)?;
        self.admin
            .search_offset(addr, &q.topic, q.queue_id, ts)
            .await
    }

    /// Pulls `[from, to)` of a queue (at most `limit` messages), printing each message found.
    async fn read_queue(
        &mut self,
        q: &MessageQueue,
        from: i64,
        to: i64,
        limit: i64,
        options: &PullOptions,
        print_body: bool,
    ) -> Result<i64, ClientError> {
        let mut offset = from;
        let mut printed = 0;
        while offset < to && printed < limit {
            let result = self.consumer.pull(q, offset, options).await?;
            match result.status {
                PullStatus::Found => {
                    for record in result.records() {
                        let m = message_json(&record?);
                        let at = m.get("queueOffset").and_then(Value::as_i64).unwrap_or(0);
                        if at >= to || printed >= limit {
                            break;
                        }
                        self.lines
                            .push(message_line(&m, &q.broker_name, print_body));
                        self.messages.push(m);
                        printed += 1;
                    }
                }
                PullStatus::NoMatchedMessage => self.lines.push(format!(
                    "{} no matched msg. status=NO_MATCHED_MSG, offset={}",
                    queue_text(q),
                    result.next_begin_offset
                )),
                PullStatus::NoNewMessage | PullStatus::OffsetIllegal => {
                    let status = if result.status == PullStatus::NoNewMessage {
                        "NO_NEW_MSG"
                    } else {
                        "OFFSET_ILLEGAL"
                    };
                    self.lines.push(format!(
                        "{} print msg finished. status={status}, offset={}",
                        queue_text(q),
                        result.next_begin_offset
                    ));
                    break;
                }
            }
            if result.next_begin_offset <= offset {
                break;
            }
            offset = result.next_begin_offset;
        }
        Ok(printed)
    }

    /// The topic's queues, or those a broker name / queue id selects.
    async fn queues(
        &self,
        topic: &str,
        broker_name: Option<&str>,
        queue_id: Option<i32>,
    ) -> Result<Vec<MessageQueue>, ClientError> {
        let mut queues: Vec<MessageQueue> = self
            .consumer
            .queues(topic)
            .await?
            .into_iter()
            .filter(|q| broker_name.is_none_or(|b| b == q.broker_name))
            .filter(|q| queue_id.is_none_or(|i| i == q.queue_id))
            .collect();
        queues.sort();
        if queues.is_empty() {
            return Err(ClientError::Invalid(format!(
                "topic {topic} has no such queue (broker {broker_name:?}, queue {queue_id:?})"
            )));
        }
        Ok(queues)
    }
}

/// Begin and end times of `-s`/`-e` (or `-b`/`-e`): neither after now, begin not after end.
fn time_range(
    begin: Option<&str>,
    end: Option<&str>,
) -> Result<(Option<i64>, Option<i64>), ClientError> {
    let now = now_ms();
    let begin = begin.map(|t| parse_timestamp(t, now)).transpose()?;
    let end = end.map(|t| parse_timestamp(t, now)).transpose()?;
    if begin.is_some_and(|b| b > now) || end.is_some_and(|e| e > now) {
        return Err(ClientError::Invalid(
            "the begin and end timestamps must not be after now".into(),
        ));
    }
    if let (Some(b), Some(e)) = (begin, end) {
        if b > e {
            return Err(ClientError::Invalid(
                "the begin timestamp must not be after the end timestamp".into(),
            ));
        }
    }
    Ok((begin, end))
}

async fn consume_message(
    args: ConsumeMessageArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    if args.count <= 0 {
        return Err(ClientError::Invalid(
            "Please input a positive messageNumber!".into(),
        ));
    }
    let (begin, end) = time_range(args.begin.as_deref(), args.end.as_deref())?;
    let mut reader = Reader::new(&args.ns.namesrv, args.group.trim(), timeout)?;
    let topic = args.topic.trim();
    let queues = reader
        .queues(
            topic,
            args.broker_name.as_deref().map(str::trim),
            args.queue_id,
        )
        .await?;
    let mut left = args.count;
    let options = PullOptions {
        max_msg_nums: 32,
        ..PullOptions::default()
    };
    for q in &queues {
        if left == 0 {
            break;
        }
        let min = reader.consumer.min_offset(q).await?;
        let max = reader.consumer.max_offset(q).await?;
        let from = match args.offset {
            Some(o) => o.max(min),
            None => reader.offset_at(q, begin, min).await?,
        };
        let to = reader.offset_at(q, end, max).await?;
        reader.lines.push(format!(
            "minOffset={from}, maxOffset={to}, {}",
            queue_text(q)
        ));
        if from < to {
            reader.lines.push("Consume ok".into());
        }
        left -= reader.read_queue(q, from, to, left, &options, true).await?;
    }
    Ok(Report::lines(
        reader.lines,
        json!({"topic": topic, "messages": reader.messages}),
    ))
}

async fn print_msg(args: PrintMsgArgs, timeout: Duration) -> Result<Report, ClientError> {
    let charset = args.charset.trim();
    if !charset.eq_ignore_ascii_case("UTF-8") && !charset.eq_ignore_ascii_case("UTF8") {
        return Err(ClientError::Invalid(format!(
            "charset {charset}: only UTF-8 is supported"
        )));
    }
    // Unlike consumeMessage, RocketMQ's printMsg takes times in the future too.
    let now = now_ms();
    let begin = args
        .begin
        .as_deref()
        .map(|t| parse_timestamp(t, now))
        .transpose()?;
    let end = args
        .end
        .as_deref()
        .map(|t| parse_timestamp(t, now))
        .transpose()?;
    let mut reader = Reader::new(&args.ns.namesrv, TOOLS_CONSUMER, timeout)?;
    let topic = args.topic.trim();
    let options = PullOptions {
        max_msg_nums: 32,
        subscription: args.sub_expression.trim().to_owned(),
        ..PullOptions::default()
    };
    for q in reader.queues(topic, None, None).await? {
        let min = reader.consumer.min_offset(&q).await?;
        let max = reader.consumer.max_offset(&q).await?;
        let from = reader.offset_at(&q, begin, min).await?;
        let to = reader.offset_at(&q, end, max).await?;
        reader.lines.push(format!(
            "minOffset={from}, maxOffset={to}, {}",
            queue_text(&q)
        ));
        reader
            .read_queue(&q, from, to, i64::MAX, &options, args.print_body)
            .await?;
        reader
            .lines
            .push("--------------------------------------------------------".into());
    }
    Ok(Report::lines(
        reader.lines,
        json!({"topic": topic, "messages": reader.messages}),
    ))
}

async fn cluster_rt(args: ClusterRtArgs, timeout: Duration) -> Result<Report, ClientError> {
    if args.amount == 0 {
        return Err(ClientError::Invalid("the amount must be at least 1".into()));
    }
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let producer = tool_producer(&args.ns.namesrv, timeout)?;
    let body = vec![b'a'; args.size];
    loop {
        let info = admin.cluster_info().await?;
        let clusters: Vec<&String> = match &args.cluster {
            Some(c) => vec![c],
            None => info.cluster_addr_table.keys().collect(),
        };
        let mut table = Table::new(&[
            "Cluster Name",
            "Broker Name",
            "RT",
            "successCount",
            "failCount",
        ]);
        let mut lines = Vec::new();
        let mut rows = Vec::new();
        for cluster in clusters {
            let Some(names) = info.cluster_addr_table.get(cluster) else {
                return Err(ClientError::Invalid(format!(
                    "cluster [{cluster}] not exist"
                )));
            };
            let mut names: Vec<&String> = names.iter().collect();
            names.sort();
            for name in names {
                // Each broker has a topic of its own name: every send goes to that broker.
                let msg = Message::new(name.as_str(), body.clone());
                let (mut ok, mut failed, mut elapsed) = (0u32, 0u32, Duration::ZERO);
                for i in 0..args.amount {
                    let start = Instant::now();
                    match producer.send(&msg).await {
                        Ok(_) => ok += 1,
                        Err(_) => failed += 1,
                    }
                    // The first send (connection, route) is left out, as RocketMQ's tool does.
                    if i != 0 {
                        elapsed += start.elapsed();
                    }
                }
                let rt_ms = if args.amount > 1 {
                    elapsed.as_secs_f64() * 1000.0 / f64::from(args.amount - 1)
                } else {
                    0.0
                };
                table.row(vec![
                    cluster.clone(),
                    name.clone(),
                    format!("{rt_ms:.2}"),
                    ok.to_string(),
                    failed.to_string(),
                ]);
                lines.push(format!(
                    "{}|{}|{cluster}|{name}|{}",
                    crate::stats_cmds::format_utc_ms(now_ms())
                        .get(..19)
                        .unwrap_or_default(),
                    args.machine_room,
                    rt_ms.round()
                ));
                rows.push(json!({
                    "cluster": cluster, "brokerName": name, "rtMs": rt_ms,
                    "successCount": ok, "failCount": failed,
                }));
            }
        }
        let report = if args.print_as_tlog {
            Report::lines(lines, json!({ "brokers": rows }))
        } else {
            Report::new(table, json!({ "brokers": rows }))
        };
        let Some(secs) = args.interval else {
            return Ok(report);
        };
        // Repeating: each round is printed as it completes.
        print!("{}", report.render(false));
        glommio::timer::sleep(Duration::from_secs(secs.max(1))).await;
    }
}
