// Request-reply (RocketMQ 4.6+'s DefaultMQProducer.request) with Apache RocketMQ's Java client (4.9.8, and
// 5.5.0 where cases_java.py says), driven by tests/interop/cases_java.py. Prints one JSON object per line.
//
//   respond NAMESRV TOPIC GROUP EXPECT SECONDS   a DefaultMQPushConsumer on TOPIC (from the first offset)
//                                                that answers each request with MessageUtil.createReplyMessage
//                                                (body "reply:" + the request's body), sent by a producer;
//                                                stops 2 s after EXPECT requests or at SECONDS
//   request NAMESRV TOPIC COUNT TIMEOUT_MS       one warm-up request (30 s), then COUNT sync requests
//                                                (request(msg, timeout)) one after the other, then COUNT
//                                                async ones (request(msg, callback, timeout)) all at once;
//                                                for a late reply, it waits TIMEOUT_MS + 10 s
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class RequestReply {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    static String body(Message m) {
        return m.getBody() == null ? null : new String(m.getBody(), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "respond":
                    respond(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
                    break;
                case "request":
                    request(args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]));
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + args[0]);
            }
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void respond(String namesrv, String topic, String group, int expect, int seconds) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group + "_replier");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        AtomicInteger answered = new AtomicInteger();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                String request = body(m);
                try {
                    Message reply = MessageUtil.createReplyMessage(m,
                        ("reply:" + request).getBytes(StandardCharsets.UTF_8));
                    SendResult r = producer.send(reply);
                    emit("kind", "replied", "body", request, "queue_id", m.getQueueId(),
                        "broker", context.getMessageQueue().getBrokerName(),
                        "cluster", m.getProperty("CLUSTER"), "reply_topic", reply.getTopic(),
                        "status", r.getSendStatus().name());
                } catch (Exception e) {
                    emit("kind", "reply_error", "body", request, "queue_id", m.getQueueId(),
                        "broker", context.getMessageQueue().getBrokerName(),
                        "cluster", m.getProperty("CLUSTER"), "error", e.toString());
                }
                answered.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        emit("kind", "started");
        long end = System.currentTimeMillis() + seconds * 1000L;
        while (answered.get() < expect && System.currentTimeMillis() < end) {
            Thread.sleep(100);
        }
        Thread.sleep(Math.min(2000, Math.max(0, end - System.currentTimeMillis())));
        consumer.shutdown();
        producer.shutdown();
        emit("kind", "done", "answered", answered.get());
    }

    static Message newRequest(String topic, String body) {
        return new Message(topic, "req", body.getBytes(StandardCharsets.UTF_8));
    }

    static void reply(String mode, int i, Message request, Message reply, long started) {
        emit("kind", "reply", "mode", mode, "i", i, "request", body(request), "body", body(reply),
            "request_correlation", request.getProperty("CORRELATION_ID"),
            "reply_correlation", reply.getProperty("CORRELATION_ID"), "reply_topic", reply.getTopic(),
            "ms", System.currentTimeMillis() - started);
    }

    static void request(String namesrv, String topic, int count, long timeoutMs) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("requester");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        try {
            // The responder may still be starting: the first request waits for it.
            Message warm = newRequest(topic, "warmup");
            long started = System.currentTimeMillis();
            reply("warmup", -1, warm, producer.request(warm, 30000), started);

            for (int i = 0; i < count; i++) {
                Message msg = newRequest(topic, "sync-" + i);
                started = System.currentTimeMillis();
                try {
                    reply("sync", i, msg, producer.request(msg, timeoutMs), started);
                } catch (Exception e) {
                    emit("kind", "request_error", "mode", "sync", "i", i, "error", e.toString(),
                        "ms", System.currentTimeMillis() - started);
                }
            }

            // 4.9.8 calls onSuccess twice per async request: when the request's send succeeds (with the
            // reply if it already came, else null) and when the reply comes. Nulls are counted, not replies.
            CountDownLatch done = new CountDownLatch(count);
            for (int i = 0; i < count; i++) {
                final int n = i;
                final Message msg = newRequest(topic, "async-" + i);
                final long t0 = System.currentTimeMillis();
                final AtomicBoolean settled = new AtomicBoolean();
                producer.request(msg, new RequestCallback() {
                    @Override
                    public void onSuccess(Message message) {
                        if (message == null) {
                            emit("kind", "null_reply", "mode", "async", "i", n);
                            return;
                        }
                        reply("async", n, msg, message, t0);
                        if (settled.compareAndSet(false, true)) {
                            done.countDown();
                        }
                    }

                    @Override
                    public void onException(Throwable e) {
                        emit("kind", "request_error", "mode", "async", "i", n, "error", e.toString(),
                            "ms", System.currentTimeMillis() - t0);
                        if (settled.compareAndSet(false, true)) {
                            done.countDown();
                        }
                    }
                }, timeoutMs);
            }
            if (!done.await(timeoutMs + 10000, TimeUnit.MILLISECONDS)) {
                emit("kind", "error", "error", done.getCount() + " async requests got neither reply nor exception");
            }
        } finally {
            producer.shutdown();
        }
    }
}
