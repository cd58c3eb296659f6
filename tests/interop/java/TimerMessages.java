// Timer messages with Apache RocketMQ's Java client (4.9.8, and 5.5.0 where cases_java.py says), driven by
// tests/interop/cases_java.py. The 4.9.8 client has no timer API; a message with the user property
// TIMER_DELAY_MS is what the 5.x client's setDelayTimeMs sends. Prints one JSON object per line.
//
//   TimerMessages NAMESRV TOPIC GROUP COUNT DELAY_MS SECONDS
//
// Starts a push consumer (from the first offset), sends plain "ready" messages until one arrives, then
// COUNT messages with TIMER_DELAY_MS = DELAY_MS (body "timer-I") and, right after them, COUNT plain ones
// (body "plain-I"). Each receipt says how long after the start of its send it arrived. Stops 2 s after
// all 2 * COUNT arrived, or at SECONDS.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TimerMessages {
    /**
     * The 5.x client's Message.setDelayTimeMs (it refuses TIMER_DELAY_MS as a user property, a name
     * it keeps for itself); on 4.9.8, which has no timer API, the user property it would have set.
     */
    static void setDelayTimeMs(Message msg, long delayMs) throws Exception {
        try {
            Message.class.getMethod("setDelayTimeMs", long.class).invoke(msg, delayMs);
        } catch (NoSuchMethodException e) {
            msg.putUserProperty("TIMER_DELAY_MS", Long.toString(delayMs));
        }
    }

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
            run(args[0], args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]),
                Integer.parseInt(args[5]));
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String namesrv, String topic, String group, int count, long delayMs, int seconds)
        throws Exception {
        // Body -> when its send started (ms).
        Map<String, Long> sendStart = new ConcurrentHashMap<>();
        AtomicInteger ready = new AtomicInteger();
        AtomicInteger got = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (body.startsWith("ready")) {
                    ready.incrementAndGet();
                    continue;
                }
                Long start = sendStart.get(body);
                emit("kind", "recv", "body", body, "topic", m.getTopic(), "queue_id", m.getQueueId(),
                    "broker", context.getMessageQueue().getBrokerName(),
                    "seq", m.getUserProperty("seq"), "timer_delay_ms", m.getUserProperty("TIMER_DELAY_MS"),
                    "after_send_ms", start == null ? null : now - start);
                got.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        DefaultMQProducer producer = new DefaultMQProducer(group + "_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        try {
            long end = System.currentTimeMillis() + seconds * 1000L;
            // The consumer is pulling every queue once a plain message sent now arrives at once.
            int readySent = 0;
            while (ready.get() == 0) {
                if (System.currentTimeMillis() >= end) {
                    throw new IllegalStateException("the consumer received none of " + readySent + " ready messages");
                }
                producer.send(new Message(topic, "ready", ("ready-" + readySent++).getBytes(StandardCharsets.UTF_8)));
                Thread.sleep(500);
            }
            emit("kind", "ready", "sent", readySent);
            for (String kind : new String[] {"timer", "plain"}) {
                for (int i = 0; i < count; i++) {
                    String body = kind + "-" + i;
                    Message msg = new Message(topic, kind, body.getBytes(StandardCharsets.UTF_8));
                    msg.putUserProperty("seq", Integer.toString(i));
                    if (kind.equals("timer")) {
                        setDelayTimeMs(msg, delayMs);
                    }
                    sendStart.put(body, System.currentTimeMillis());
                    SendResult r = producer.send(msg);
                    emit("kind", "sent", "body", body, "status", r.getSendStatus().name(),
                        "queue_id", r.getMessageQueue().getQueueId(),
                        "broker", r.getMessageQueue().getBrokerName());
                }
            }
            while (got.get() < 2 * count && System.currentTimeMillis() < end) {
                Thread.sleep(50);
            }
            Thread.sleep(Math.min(2000, Math.max(0, end - System.currentTimeMillis())));
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        emit("kind", "done", "received", got.get());
    }
}
