//! Send and read checks as Apache's mqadmin prints them: printMsgByQueue (one queue's messages,
//! optionally counted by tag), sendMsgStatus (timed sends to a broker's own topic) and
//! checkMsgSendRT (timed sends over a topic's queues, with the mean RT).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use client::pull::{PullOptions, PullStatus};
use client::{
    BrokerConnections, ClientError, Message, MessageQueue, NameServer, Producer, ProducerConfig,
    PullConsumer, SendResult,
};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::consumer_cmds::parse_timestamp;
use crate::message_cmds::{message_json, TOOLS_CONSUMER};
use crate::send_consume_cmds::{message_line, queue_text};
use crate::shared_args::Namesrv;
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// Print Message Detail by queueId.
    #[command(name = "printMsgByQueue")]
    PrintMsgByQueue(PrintMsgByQueueArgs),
    /// Send msg to broker: timed sends to the topic named after a broker.
    #[command(name = "sendMsgStatus")]
    SendMsgStatus(SendMsgStatusArgs),
    /// Check message send response time.
    #[command(name = "checkMsgSendRT")]
    CheckMsgSendRt(CheckMsgSendRtArgs),
}

#[derive(Debug, Args)]
pub struct PrintMsgByQueueArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Broker name
    #[arg(short = 'a', long = "brokerName")]
    pub broker_name: String,
    #[arg(short = 'i', long = "queueId")]
    pub queue_id: i32,
    /// Charset of the bodies (UTF-8 only)
    #[arg(short = 'c', long = "charsetName", default_value = "UTF-8")]
    pub charset: String,
    /// Subscribe expression, e.g. "TagA || TagB"
    #[arg(short = 's', long = "subExpression", default_value = "*")]
    pub sub_expression: String,
    /// Begin timestamp: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
    #[arg(short = 'b', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// End timestamp: epoch ms or yyyy-MM-dd#HH:mm:ss:SSS (UTC)
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Print the messages
    #[arg(short = 'p', long = "printMsg", default_value_t = false, action = clap::ArgAction::Set)]
    pub print_msg: bool,
    /// Print the bodies (with -p true)
    #[arg(short = 'd', long = "printBody", default_value_t = false, action = clap::ArgAction::Set)]
    pub print_body: bool,
    /// Count the messages by tag
    #[arg(short = 'f', long = "calculate", default_value_t = false, action = clap::ArgAction::Set)]
    pub calculate: bool,
}

#[derive(Debug, Args)]
pub struct SendMsgStatusArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Broker name (its own topic is sent to), e.g. broker-a
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: String,
    /// Message size in bytes
    #[arg(short = 's', long = "messageSize", default_value_t = 128)]
    pub size: usize,
    /// Messages to send
    #[arg(short = 'c', long = "count", default_value_t = 50)]
    pub count: u32,
}

#[derive(Debug, Args)]
pub struct CheckMsgSendRtArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Messages to send
    #[arg(short = 'a', long = "amount", default_value_t = 100)]
    pub amount: u64,
    /// Message size in bytes
    #[arg(short = 's', long = "size", default_value_t = 128)]
    pub size: usize,
}

pub async fn run(command: CheckCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        CheckCommand::PrintMsgByQueue(args) => print_msg_by_queue(args, timeout).await,
        CheckCommand::SendMsgStatus(args) => send_msg_status(args, timeout).await,
        CheckCommand::CheckMsgSendRt(args) => check_msg_send_rt(args, timeout).await,
    }
}

/// `Tag: %-30s Count: %s` lines, most frequent first (ties by tag).
pub fn tag_count_lines(counts: &BTreeMap<String, u64>) -> Vec<String> {
    let mut list: Vec<(&String, &u64)> = counts.iter().collect();
    list.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    list.into_iter()
        .map(|(tag, n)| format!("Tag: {tag:<30} Count: {n}"))
        .collect()
}

async fn print_msg_by_queue(
    args: PrintMsgByQueueArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let charset = args.charset.trim();
    if !charset.eq_ignore_ascii_case("UTF-8") && !charset.eq_ignore_ascii_case("UTF8") {
        return Err(ClientError::Invalid(format!(
            "charset {charset}: only UTF-8 is supported"
        )));
    }
    let now = client::uniq_key::now_millis();
    let begin = args
        .begin
        .as_deref()
        .map(|t| parse_timestamp(t.trim(), now))
        .transpose()?;
    let end = args
        .end
        .as_deref()
        .map(|t| parse_timestamp(t.trim(), now))
        .transpose()?;
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let ns = NameServer::from_list(&args.ns.namesrv, timeout)?;
    let consumer = PullConsumer::new(
        TOOLS_CONSUMER,
        ns,
        BrokerConnections::new(1, timeout),
        timeout,
    );
    let queue = MessageQueue {
        topic: args.topic.trim().to_owned(),
        broker_name: args.broker_name.trim().to_owned(),
        queue_id: args.queue_id,
    };
    let mut from = consumer.min_offset(&queue).await?;
    let mut to = consumer.max_offset(&queue).await?;
    if begin.is_some() || end.is_some() {
        let route = consumer.route(&queue.topic).await?;
        let addr = route.master_addr(&queue.broker_name)?;
        if let Some(ts) = begin {
            from = admin
                .search_offset(addr, &queue.topic, queue.queue_id, ts)
                .await?;
        }
        if let Some(ts) = end {
            to = admin
                .search_offset(addr, &queue.topic, queue.queue_id, ts)
                .await?;
        }
    }
    let options = PullOptions {
        max_msg_nums: 32,
        subscription: args.sub_expression.trim().to_owned(),
        ..PullOptions::default()
    };
    let mut lines = Vec::new();
    let mut messages = Vec::new();
    let mut tags: BTreeMap<String, u64> = BTreeMap::new();
    let mut offset = from;
    while offset < to {
        let result = consumer.pull(&queue, offset, &options).await?;
        if result.status == PullStatus::Found {
            for record in result.records() {
                let m = message_json(&record?);
                let at = m.get("queueOffset").and_then(Value::as_i64).unwrap_or(0);
                if at >= to {
                    break;
                }
                let tag = m.get("tags").and_then(Value::as_str).unwrap_or_default();
                if args.calculate && !tag.trim().is_empty() {
                    *tags.entry(tag.to_owned()).or_default() += 1;
                }
                if args.print_msg {
                    lines.push(message_line(&m, &queue.broker_name, args.print_body));
                }
                messages.push(m);
            }
        } else if result.status != PullStatus::NoMatchedMessage {
            // NO_NEW_MSG / OFFSET_ILLEGAL end the queue, as Apache's tool does; a batch without
            // a match is read past (Apache's stops there and misses later matches).
            break;
        }
        if result.next_begin_offset <= offset {
            break;
        }
        offset = result.next_begin_offset;
    }
    if args.calculate {
        lines.extend(tag_count_lines(&tags));
    }
    Ok(Report::lines(
        lines,
        json!({
            "queue": queue_text(&queue), "minOffset": from, "maxOffset": to,
            "messages": messages, "tagCounts": tags,
        }),
    ))
}

/// A producer of `group` for these checks.
fn check_producer(namesrv: &str, group: &str, timeout: Duration) -> Result<Producer, ClientError> {
    Ok(Producer::new(
        NameServer::from_list(namesrv, timeout)?,
        ProducerConfig {
            group: group.to_owned(),
            send_timeout: timeout,
            connect_timeout: timeout,
            ..ProducerConfig::default()
        },
    ))
}

/// Java's `SendResult.toString()` (4.9.8) of a SEND_OK result.
pub fn send_result_text(r: &SendResult) -> String {
    format!(
        "SendResult [sendStatus=SEND_OK, msgId={}, offsetMsgId={}, messageQueue={}, queueOffset={}]",
        r.msg_id,
        r.offset_msg_id,
        queue_text(&r.queue),
        r.queue_offset
    )
}

/// Apache's sendMsgStatus body: "hello jodie" repeated until at least `size` bytes (steps of 11).
fn jodie_body(size: usize) -> Vec<u8> {
    "hello jodie".repeat(size.div_ceil(11)).into_bytes()
}

async fn send_msg_status(
    args: SendMsgStatusArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let topic = args.broker_name.trim();
    let producer = check_producer(&args.ns.namesrv, "PID_SMSC", timeout)?;
    // The first send (route, connection) is not counted, as Apache's tool does.
    producer.send(&Message::new(topic, jodie_body(16))).await?;
    let msg = Message::new(topic, jodie_body(args.size));
    let mut lines = Vec::new();
    let mut sends = Vec::new();
    for _ in 0..args.count {
        let start = Instant::now();
        let result = producer.send(&msg).await?;
        let rt = start.elapsed().as_millis();
        lines.push(format!(
            "rt={rt}ms, SendResult={}",
            send_result_text(&result)
        ));
        sends.push(json!({
            "rtMs": rt, "sendStatus": "SEND_OK", "msgId": result.msg_id,
            "brokerName": result.queue.broker_name, "queueId": result.queue.queue_id,
            "queueOffset": result.queue_offset,
        }));
    }
    Ok(Report::lines(
        lines,
        json!({"brokerName": topic, "successCount": sends.len(), "sends": sends}),
    ))
}

fn rt_line(broker: &str, queue: &str, ok: &str, rt: &str) -> String {
    format!("{broker:<32}  {queue:<4}  {ok:<20}    {rt}")
}

async fn check_msg_send_rt(
    args: CheckMsgSendRtArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let topic = args.topic.trim();
    let group = client::uniq_key::now_millis().to_string();
    let producer = check_producer(&args.ns.namesrv, &group, timeout)?;
    let msg = Message::new(topic, vec![b'a'; args.size]);
    let mut lines = vec![rt_line("#Broker Name", "#QID", "#Send Result", "#RT")];
    let mut rows = Vec::new();
    let (mut elapsed_ms, mut ok_count) = (0u128, 0u64);
    let (mut broker, mut queue_id) = (String::new(), 0);
    for i in 0..args.amount {
        let start = Instant::now();
        let sent = async {
            let route = producer.route(topic).await?;
            let queue = route
                .select_write_queue(usize::try_from(i).unwrap_or(0))?
                .clone();
            broker = queue.broker_name.clone();
            queue_id = queue.queue_id;
            producer.send_to_queue(&msg, &queue).await
        }
        .await;
        let rt = start.elapsed().as_millis();
        if i != 0 {
            elapsed_ms += rt;
        }
        let ok = sent.is_ok();
        ok_count += u64::from(ok);
        lines.push(rt_line(
            &broker,
            &queue_id.to_string(),
            &ok.to_string(),
            &rt.to_string(),
        ));
        rows.push(json!({"brokerName": broker, "queueId": queue_id, "success": ok, "rtMs": rt}));
    }
    let avg = if args.amount > 1 {
        elapsed_ms as f64 / (args.amount - 1) as f64
    } else {
        0.0
    };
    lines.push(format!("Avg RT: {avg:.2}"));
    Ok(Report::lines(
        lines,
        json!({
            "topic": topic, "amount": args.amount, "successCount": ok_count,
            "avgRtMs": avg, "sends": rows,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_count_most_frequent_first() {
        let counts = BTreeMap::from([
            ("A".to_owned(), 2),
            ("B".to_owned(), 5),
            ("C".to_owned(), 2),
        ]);
        let lines = tag_count_lines(&counts);
        assert_eq!(lines[0], format!("Tag: {:<30} Count: 5", "B"));
        assert_eq!(lines[1], format!("Tag: {:<30} Count: 2", "A"));
        assert_eq!(lines[2], format!("Tag: {:<30} Count: 2", "C"));
    }

    #[test]
    fn jodie_bodies_grow_in_steps_of_eleven() {
        assert_eq!(jodie_body(16).len(), 22);
        assert_eq!(jodie_body(128).len(), 132);
        assert!(jodie_body(0).is_empty());
        assert_eq!(
            rt_line("b", "1", "true", "3"),
            format!("{:<32}  {:<4}  {:<20}    3", "b", "1", "true")
        );
    }
}
