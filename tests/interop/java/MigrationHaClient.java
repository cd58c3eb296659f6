// Apache RocketMQ's Java client in the in-place migration (tests/interop/cases_migration_ha.py): our broker
// follows an Apache master as its slave, then replaces it. Prints one JSON object per line.
//
//   MigrationHaClient produce NAMESRV TOPIC PREFIX COUNT BODY_BYTES
//   MigrationHaClient consume NAMESRV TOPIC GROUP WANT IDLE_MS
//
// `produce` sends COUNT messages one after the other, body "PREFIX-i|" padded with 'x' to BODY_BYTES,
// keys "PREFIX-key-i", and prints per send {"kind":"sent","i","status","broker","queue","queue_offset",
// "offset_msg_id","msg_id"} or {"kind":"send_error","i","error"}; then exits.
// `consume` runs a push consumer of GROUP (offsets committed every second) and prints every delivery
// {"kind":"recv","body" (the part before '|'),"keys","msg_id","store_host","queue","queue_offset"}
// (duplicates too); once WANT distinct bodies arrived and nothing new came for IDLE_MS (or after 60 s) it
// shuts down, which commits its offsets, and exits.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class MigrationHaClient {
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
                produce(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            } else {
                consume(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            }
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void produce(String namesrv, String topic, String prefix, int count, int bodyBytes) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("migration_ha_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(5000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        for (int i = 0; i < count; i++) {
            byte[] head = (prefix + "-" + i + "|").getBytes(StandardCharsets.UTF_8);
            byte[] body = new byte[Math.max(bodyBytes, head.length)];
            Arrays.fill(body, (byte) 'x');
            System.arraycopy(head, 0, body, 0, head.length);
            Message msg = new Message(topic, "TagH", prefix + "-key-" + i, body);
            try {
                SendResult r = producer.send(msg);
                emit("kind", "sent", "i", i, "status", r.getSendStatus().toString(),
                    "broker", r.getMessageQueue().getBrokerName(), "queue", r.getMessageQueue().getQueueId(),
                    "queue_offset", r.getQueueOffset(), "offset_msg_id", r.getOffsetMsgId(),
                    "msg_id", r.getMsgId());
            } catch (Exception e) {
                emit("kind", "send_error", "i", i, "error", e.toString());
            }
        }
        producer.shutdown();
        emit("kind", "done");
    }

    static void consume(String namesrv, String topic, String group, int want, int idleMs) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.subscribe(topic, "*");
        Set<String> seen = new HashSet<>();
        AtomicLong last = new AtomicLong(System.currentTimeMillis());
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                int bar = body.indexOf('|');
                String name = bar < 0 ? body : body.substring(0, bar);
                synchronized (seen) {
                    if (seen.add(name)) {
                        last.set(System.currentTimeMillis());
                    }
                }
                emit("kind", "recv", "body", name, "keys", m.getKeys(), "msg_id", m.getMsgId(),
                    "store_host", m.getStoreHost().toString(), "queue", m.getQueueId(),
                    "queue_offset", m.getQueueOffset());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        emit("kind", "started");
        long deadline = System.currentTimeMillis() + 60000;
        while (System.currentTimeMillis() < deadline) {
            int n;
            synchronized (seen) {
                n = seen.size();
            }
            if (n >= want && System.currentTimeMillis() - last.get() >= idleMs) {
                break;
            }
            Thread.sleep(100);
        }
        // shutdown() commits the offsets it holds to the broker before it returns.
        consumer.shutdown();
        emit("kind", "done");
    }
}
