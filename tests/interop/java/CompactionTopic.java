// A compaction topic (cleanup.policy=COMPACTION) with Apache RocketMQ's Java client, driven by
// tests/interop/cases_compaction.py. Prints one JSON object per line.
//
//   CompactionTopic produce NAMESRV TOPIC VERSIONS KEYS
//     sends VERSIONS rounds of KEYS keyed messages (key "key-KKKK", body "vVV-key-KKKK"), each key always
//     to the same queue (chosen by the key's hash, as Apache's compaction example does), synchronously;
//     one {"kind":"sent",...} per round and {"kind":"send_failed",...} per failed send.
//   CompactionTopic consume NAMESRV TOPIC GROUP SECONDS
//     a DefaultLitePullConsumer of a fresh GROUP subscribed from the first offset, polling until 3 s
//     pass without a message or SECONDS end;
//     one {"kind":"recv","key","body","queue_id","queue_offset"} per message, then {"kind":"done"}.
//   CompactionTopic push NAMESRV TOPIC GROUP SECONDS
//     the same with a DefaultMQPushConsumer from the first offset on one consume thread (so each queue's
//     messages are seen in order); it needs no master (the lite pull consumer's seekToBegin asks the
//     master for the queue's min offset), so it reads a slave whose master is gone.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class CompactionTopic {
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
            if (args[0].equals("produce")) {
                produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            } else if (args[0].equals("push")) {
                push(args[1], args[2], args[3], Integer.parseInt(args[4]));
            } else {
                consume(args[1], args[2], args[3], Integer.parseInt(args[4]));
            }
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void produce(String namesrv, String topic, int versions, int keys) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("compaction_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.start();
        for (int v = 0; v < versions; v++) {
            int ok = 0;
            for (int k = 0; k < keys; k++) {
                String key = String.format("key-%04d", k);
                String body = String.format("v%02d-%s", v, key);
                Message msg = new Message(topic, "t", key, body.getBytes(StandardCharsets.UTF_8));
                try {
                    SendResult r = producer.send(msg, (mqs, m, arg) ->
                        mqs.get(Math.floorMod(arg.hashCode(), mqs.size())), key);
                    if (r.getSendStatus() == SendStatus.SEND_OK) {
                        ok++;
                    } else {
                        emit("kind", "send_failed", "key", key, "version", v, "status", r.getSendStatus().name());
                    }
                } catch (Exception e) {
                    emit("kind", "send_failed", "key", key, "version", v, "error", e.toString());
                }
            }
            emit("kind", "sent", "version", v, "ok", ok);
        }
        producer.shutdown();
    }

    static void push(String namesrv, String topic, String group, int seconds) throws Exception {
        AtomicLong lastMessage = new AtomicLong(System.currentTimeMillis());
        AtomicInteger received = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                lastMessage.set(System.currentTimeMillis());
                received.incrementAndGet();
                emit("kind", "recv", "key", m.getKeys(), "body", new String(m.getBody(), StandardCharsets.UTF_8),
                    "store_host", String.valueOf(m.getStoreHost()), "queue_id", m.getQueueId(),
                    "queue_offset", m.getQueueOffset());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long end = System.currentTimeMillis() + seconds * 1000L;
        // Idle long enough for a rebalance and the first pulls, then 5 s after the last message.
        Thread.sleep(5000);
        while (System.currentTimeMillis() < end && System.currentTimeMillis() - lastMessage.get() < 5000) {
            Thread.sleep(200);
        }
        emit("kind", "done", "received", received.get());
        consumer.shutdown();
    }

    static void consume(String namesrv, String topic, String group, int seconds) throws Exception {
        // Subscribed from the first offset rather than assign() then seekToBegin() as Apache's example
        // does: there the queues start pulling at assign(), and a seek that lands after the first pull
        // sends a queue back, so messages would repeat out of order.
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setAutoCommit(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.start();
        Collection<MessageQueue> queues = consumer.fetchMessageQueues(topic);
        long end = System.currentTimeMillis() + seconds * 1000L;
        long lastMessage = System.currentTimeMillis();
        int received = 0;
        while (System.currentTimeMillis() < end && System.currentTimeMillis() - lastMessage < 3000) {
            List<MessageExt> msgs = consumer.poll(500);
            for (MessageExt m : msgs) {
                lastMessage = System.currentTimeMillis();
                received++;
                emit("kind", "recv", "key", m.getKeys(), "body", new String(m.getBody(), StandardCharsets.UTF_8),
                    "store_host", String.valueOf(m.getStoreHost()), "queue_id", m.getQueueId(), "queue_offset", m.getQueueOffset());
            }
        }
        emit("kind", "done", "received", received, "queues", queues.size());
        consumer.shutdown();
    }
}
