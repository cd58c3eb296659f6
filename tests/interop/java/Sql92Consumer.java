// SQL92 property filters (MessageSelector.bySql) with Apache RocketMQ's Java client (4.9.8, and 5.5.0 where
// cases_java.py says), driven by tests/interop/cases_java.py. Prints one JSON object per line: what was
// sent, received, or refused.
//
//   produce NAMESRV TOPIC COUNT                      messages 0..COUNT-1 with user properties:
//                                                    a = i (left out when i % 7 == 6), b = x/y (even/odd)
//   push    NAMESRV TOPIC GROUP SQL EXPECT SECONDS   DefaultMQPushConsumer with bySql(SQL), from the first
//   lite    NAMESRV TOPIC GROUP SQL EXPECT SECONDS   DefaultLitePullConsumer with bySql(SQL), from the first
//                                                    offset; stops 3 s after EXPECT messages or at SECONDS
//   start   NAMESRV TOPIC GROUP SQL                  only starts a push consumer: "started" or "start_error"
//                                                    with the broker's response code
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class Sql92Consumer {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    static void received(MessageExt m) {
        emit("kind", "recv", "seq", m.getUserProperty("seq"), "a", m.getUserProperty("a"),
            "b", m.getUserProperty("b"), "body", new String(m.getBody(), StandardCharsets.UTF_8),
            "queue_id", m.getQueueId(), "queue_offset", m.getQueueOffset());
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String namesrv = args[1];
        String topic = args[2];
        try {
            switch (mode) {
                case "produce":
                    produce(namesrv, topic, Integer.parseInt(args[3]));
                    break;
                case "push":
                    push(namesrv, topic, args[3], args[4], Integer.parseInt(args[5]), Integer.parseInt(args[6]));
                    break;
                case "lite":
                    lite(namesrv, topic, args[3], args[4], Integer.parseInt(args[5]), Integer.parseInt(args[6]));
                    break;
                case "start":
                    startOnly(namesrv, topic, args[3], args[4]);
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void produce(String namesrv, String topic, int count) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("sql92_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, "TagA", ("sql-" + i).getBytes(StandardCharsets.UTF_8));
                msg.putUserProperty("seq", Integer.toString(i));
                if (i % 7 != 6) {
                    msg.putUserProperty("a", Integer.toString(i));
                }
                msg.putUserProperty("b", i % 2 == 0 ? "x" : "y");
                SendResult r = producer.send(msg);
                emit("kind", "sent", "i", i, "status", r.getSendStatus().name(),
                    "queue_id", r.getMessageQueue().getQueueId(), "queue_offset", r.getQueueOffset());
            }
        } finally {
            producer.shutdown();
        }
    }

    static void waitFor(AtomicInteger got, int expect, int seconds) throws InterruptedException {
        long end = System.currentTimeMillis() + seconds * 1000L;
        while (got.get() < expect && System.currentTimeMillis() < end) {
            Thread.sleep(100);
        }
        // Anything the filter should have dropped would arrive in this grace period.
        Thread.sleep(Math.min(3000, Math.max(0, end - System.currentTimeMillis())));
    }

    static void push(String namesrv, String topic, String group, String sql, int expect, int seconds)
        throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, MessageSelector.bySql(sql));
        AtomicInteger got = new AtomicInteger();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                received(m);
                got.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        emit("kind", "started");
        waitFor(got, expect, seconds);
        // A queue whose last messages the filter skips: the consumer's offset passes them once a pull
        // after the last match comes back with nothing new (a long poll, up to 15 s). Wait for every
        // queue's offset to reach its end (or 30 s), so the commit at shutdown shows where it got.
        Set<MessageQueue> mqs = consumer.fetchSubscribeMessageQueues(topic);
        OffsetStore store = consumer.getDefaultMQPushConsumerImpl().getOffsetStore();
        long settleStart = System.currentTimeMillis();
        boolean settled = false;
        while (!settled && System.currentTimeMillis() < settleStart + 30000) {
            settled = true;
            for (MessageQueue mq : mqs) {
                if (store.readOffset(mq, ReadOffsetType.READ_FROM_MEMORY) < consumer.maxOffset(mq)) {
                    settled = false;
                    break;
                }
            }
            if (!settled) {
                Thread.sleep(200);
            }
        }
        emit("kind", "offsets", "at_queue_ends", settled, "ms", System.currentTimeMillis() - settleStart);
        // Shutdown commits the group's offsets to the broker.
        consumer.shutdown();
        emit("kind", "done", "received", got.get());
    }

    static void lite(String namesrv, String topic, String group, String sql, int expect, int seconds)
        throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, MessageSelector.bySql(sql));
        consumer.start();
        emit("kind", "started");
        AtomicInteger got = new AtomicInteger();
        long end = System.currentTimeMillis() + seconds * 1000L;
        long quietUntil = Long.MAX_VALUE;
        while (System.currentTimeMillis() < Math.min(end, quietUntil)) {
            List<MessageExt> msgs = consumer.poll(500);
            for (MessageExt m : msgs) {
                received(m);
                got.incrementAndGet();
            }
            if (got.get() >= expect && quietUntil == Long.MAX_VALUE) {
                quietUntil = System.currentTimeMillis() + 3000;
            }
        }
        consumer.shutdown();
        emit("kind", "done", "received", got.get());
    }

    static void startOnly(String namesrv, String topic, String group, String sql) {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        try {
            consumer.subscribe(topic, MessageSelector.bySql(sql));
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) ->
                ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            consumer.start();
            emit("kind", "started");
        } catch (MQClientException e) {
            emit("kind", "start_error", "code", e.getResponseCode(), "message", String.valueOf(e.getErrorMessage()));
        } finally {
            consumer.shutdown();
        }
    }
}
