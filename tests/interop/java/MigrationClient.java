// Apache RocketMQ's Java client (4.9.8 or 5.5.0) running through a migration from Apache's brokers and
// name server to ours (tests/interop/cases_migration.py): one producer or one push consumer that keeps
// running while brokers join, are drained and leave and while the name servers are swapped. Prints one
// JSON object per line.
//
//   MigrationClient produce NAMESRVS TOPIC PREFIX PACE_MS POLL_MS STOPFILE
//   MigrationClient consume NAMESRVS TOPIC GROUP POLL_MS STOPFILE
//
// NAMESRVS is the client's namesrvAddr as users write it ("a;b"). POLL_MS is pollNameServerInterval
// (the client's route refresh; 30 s by default). Both run until STOPFILE exists.
// `produce` first looks the topic's route up until a name server answers ({"kind":"route_retry"} per
// failed try), then sends PREFIX-i (keys "PREFIX-key-i") one after the other, PACE_MS apart, and prints per send
// {"kind":"sent","i","t","status","broker","queue","queue_offset","offset_msg_id","msg_id"} or
// {"kind":"send_error","i","t","error"}. `consume` (the default CONSUME_FROM_LAST_OFFSET, as most
// applications run) prints every delivery {"kind":"recv","body","keys","t","store_host","queue",
// "queue_offset","reconsume_times"}; duplicates are printed too (the case counts them).
import com.alibaba.fastjson.JSON;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class MigrationClient {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        try {
            if ("produce".equals(args[0])) {
                produce(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                    new File(args[6]));
            } else {
                consume(args[1], args[2], args[3], Integer.parseInt(args[4]), new File(args[5]));
            }
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void produce(String namesrvs, String topic, String prefix, int paceMs, int pollMs, File stop)
        throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("migration_producer");
        producer.setNamesrvAddr(namesrvs);
        producer.setPollNameServerInterval(pollMs);
        producer.setSendMsgTimeout(3000);
        producer.start();
        // A client that asks a listed name server which is not running yet fails that request (the 5.x
        // client does, then uses the next one; 4.9.8 tries the next within the request): learn the
        // topic's route before the numbered sends, whose failures the case counts.
        long routeDeadline = System.currentTimeMillis() + 30000;
        while (true) {
            try {
                producer.fetchPublishMessageQueues(topic);
                break;
            } catch (Exception e) {
                emit("kind", "route_retry", "t", System.currentTimeMillis(), "error", e.toString());
                if (System.currentTimeMillis() > routeDeadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
        emit("kind", "started", "t", System.currentTimeMillis());
        for (int i = 0; !stop.exists(); i++) {
            Message msg = new Message(topic, "TagM", prefix + "-key-" + i,
                (prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
            try {
                SendResult r = producer.send(msg);
                emit("kind", "sent", "i", i, "t", System.currentTimeMillis(),
                    "status", r.getSendStatus().toString(), "broker", r.getMessageQueue().getBrokerName(),
                    "queue", r.getMessageQueue().getQueueId(), "queue_offset", r.getQueueOffset(),
                    "offset_msg_id", r.getOffsetMsgId(), "msg_id", r.getMsgId());
            } catch (Exception e) {
                emit("kind", "send_error", "i", i, "t", System.currentTimeMillis(), "error", e.toString());
            }
            Thread.sleep(paceMs);
        }
        producer.shutdown();
        emit("kind", "done", "t", System.currentTimeMillis());
    }

    static void consume(String namesrvs, String topic, String group, int pollMs, File stop) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrvs);
        consumer.setPollNameServerInterval(pollMs);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                emit("kind", "recv", "body", new String(m.getBody(), StandardCharsets.UTF_8),
                    "keys", m.getKeys(), "t", System.currentTimeMillis(),
                    "store_host", m.getStoreHost().toString(), "queue", m.getQueueId(),
                    "queue_offset", m.getQueueOffset(), "reconsume_times", m.getReconsumeTimes());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        // Ready once the rebalance gave it queues. A name server of the list that is not running yet
        // fails a route lookup (the 5.x client's; then it uses the next), which would leave it without
        // queues until the next rebalance (20 s): look the route up and rebalance again until then.
        long deadline = System.currentTimeMillis() + 30000;
        while (consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().isEmpty()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("no queue of " + topic + " assigned within 30 s");
            }
            try {
                consumer.getDefaultMQPushConsumerImpl().getmQClientFactory().updateTopicRouteInfoFromNameServer(topic);
            } catch (Exception e) {
                emit("kind", "route_retry", "t", System.currentTimeMillis(), "error", e.toString());
            }
            consumer.getDefaultMQPushConsumerImpl().getmQClientFactory().rebalanceImmediately();
            Thread.sleep(200);
        }
        emit("kind", "started", "t", System.currentTimeMillis(),
            "queues", consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().size());
        while (!stop.exists()) {
            Thread.sleep(100);
        }
        // shutdown() commits the offsets it holds to the brokers before it returns.
        consumer.shutdown();
        emit("kind", "done", "t", System.currentTimeMillis());
    }
}
