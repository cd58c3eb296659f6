// Message recall (RocketMQ 5.3.2+) with Apache RocketMQ's Java client 5.5.0, driven by
// tests/interop/cases_recall.py. Compiled against 4.9.8 too (setup.sh compiles every program for both
// sets), so the 5.x-only calls (SendResult.getRecallHandle, DefaultMQProducer.recallMessage,
// Message.setDelayTimeMs) go through reflection. Prints one JSON object per line.
//
//   RecallClient NAMESRV TOPIC GROUP DELAY_MS
//
// Starts a push consumer (from the first offset), sends plain "ready" messages until one arrives, then two
// timer messages due in DELAY_MS ("gone", "kept") and recalls "gone" by its handle. Once "kept" has
// arrived (or DELAY_MS + 15 s passed) and 3 s more, it recalls "kept" by its handle too (already
// delivered: refused) and reports what the consumer received.
import com.alibaba.fastjson.JSON;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class RecallClient {
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
            run(args[0], args[1], args[2], Long.parseLong(args[3]));
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static String recall(DefaultMQProducer producer, String topic, String handle) throws Exception {
        try {
            return (String) DefaultMQProducer.class.getMethod("recallMessage", String.class, String.class)
                .invoke(producer, topic, handle);
        } catch (InvocationTargetException e) {
            throw (Exception) e.getCause();
        }
    }

    static void run(String namesrv, String topic, String group, long delayMs) throws Exception {
        List<String> received = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                received.add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        DefaultMQProducer producer = new DefaultMQProducer(group + "_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        try {
            long end = System.currentTimeMillis() + 30_000;
            int readySent = 0;
            while (received.isEmpty()) {
                if (System.currentTimeMillis() >= end) {
                    throw new IllegalStateException("the consumer received none of " + readySent + " ready messages");
                }
                producer.send(new Message(topic, "ready", ("ready-" + readySent++).getBytes(StandardCharsets.UTF_8)));
                Thread.sleep(500);
            }
            Map<String, String> handles = new LinkedHashMap<>();
            for (String body : new String[] {"gone", "kept"}) {
                Message msg = new Message(topic, "timer", body.getBytes(StandardCharsets.UTF_8));
                Message.class.getMethod("setDelayTimeMs", long.class).invoke(msg, delayMs);
                SendResult r = producer.send(msg);
                String handle = (String) SendResult.class.getMethod("getRecallHandle").invoke(r);
                handles.put(body, handle);
                emit("kind", "sent", "body", body, "status", r.getSendStatus().name(), "msg_id", r.getMsgId(),
                    "broker", r.getMessageQueue().getBrokerName(), "recall_handle", handle);
            }
            String id = recall(producer, topic, handles.get("gone"));
            emit("kind", "recalled", "body", "gone", "msg_id", id);
            long due = System.currentTimeMillis() + delayMs;
            while (!received.contains("kept") && System.currentTimeMillis() < due + 15_000) {
                Thread.sleep(50);
            }
            Thread.sleep(3000);
            try {
                recall(producer, topic, handles.get("kept"));
                emit("kind", "refused", "body", "kept", "code", 0, "remark", "accepted");
            } catch (MQBrokerException e) {
                emit("kind", "refused", "body", "kept", "code", e.getResponseCode(), "remark", e.getErrorMessage());
            }
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        for (String body : received) {
            if (!body.startsWith("ready")) {
                emit("kind", "recv", "body", body);
            }
        }
        emit("kind", "done");
    }
}
