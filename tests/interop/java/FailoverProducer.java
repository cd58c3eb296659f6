// A producer that keeps sending through a master failover, with Apache RocketMQ's Java client (4.9.8, and
// 5.5.0 where cases_java.py says), driven by tests/interop/cases_failover.py. Prints one JSON object per
// line.
//
//   FailoverProducer NAMESRV TOPIC PREFIX GROUP POLL_MS PACE_MS STOP_FILE SECONDS
//
// Sends message 0, 1, 2, ... synchronously (DefaultMQProducer, retryTimesWhenSendFailed 2, the default)
// with the fields of tests/interop/messages.py (body, tags, keys, user properties seq and origin). A
// send() that throws, or answers a status other than SEND_OK, is repeated for the same message (the same
// Message object, so the same msgId) until SEND_OK: the application's at-least-once. Every send() outcome
// is a line: `sent` with the SendResult (broker name, queue id, queue offset, msgId, offsetMsgId) or
// `send_error`, each with the wall-clock time and how many attempts the client made for the message so
// far (counted by a SendMessageHook, which the client calls once per attempt that reached a broker
// address, its own retries included). POLL_MS > 0 sets pollNameServerInterval (the client's route poll;
// default 30000); 0 keeps the default. Stops when STOP_FILE exists or after SECONDS.
import com.alibaba.fastjson.JSON;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.hook.SendMessageHook;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

public class FailoverProducer {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    /** messages.py's body(prefix, i). */
    static String body(String prefix, int i) {
        StringBuilder b = new StringBuilder(prefix).append("-body-").append(i).append('-');
        for (int k = 0; k < i % 5; k++) {
            b.append('\u00e9');
        }
        for (int k = 0; k < i % 23; k++) {
            b.append('x');
        }
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        try {
            run(args[0], args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                new File(args[6]), Integer.parseInt(args[7]));
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String namesrv, String topic, String prefix, String group, int pollMs, int paceMs,
                    File stop, int seconds) throws Exception {
        // Message keys -> attempts the client made for it (every attempt passes the hook).
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        if (pollMs > 0) {
            producer.setPollNameServerInterval(pollMs);
        }
        producer.setRetryTimesWhenSendFailed(2);
        producer.setSendMsgTimeout(3000);
        producer.getDefaultMQProducerImpl().registerSendMessageHook(new SendMessageHook() {
            @Override
            public String hookName() {
                return "count-attempts";
            }

            @Override
            public void sendMessageBefore(SendMessageContext context) {
                attempts.merge(context.getMessage().getKeys(), 1, Integer::sum);
            }

            @Override
            public void sendMessageAfter(SendMessageContext context) {
            }
        });
        producer.start();
        emit("kind", "started", "poll_ms", producer.getPollNameServerInterval());
        long end = System.currentTimeMillis() + seconds * 1000L;
        int i = 0;
        try {
            while (!stop.exists() && System.currentTimeMillis() < end) {
                String keys = prefix + "-key-" + i;
                Message msg = new Message(topic, "Tag" + (i % 3), keys, body(prefix, i).getBytes(StandardCharsets.UTF_8));
                msg.putUserProperty("seq", Integer.toString(i));
                msg.putUserProperty("origin", prefix);
                int calls = 0;
                while (!stop.exists() && System.currentTimeMillis() < end) {
                    calls++;
                    try {
                        SendResult r = producer.send(msg);
                        long now = System.currentTimeMillis();
                        emit("kind", "sent", "i", i, "t_ms", now, "status", r.getSendStatus().name(),
                            "broker", r.getMessageQueue().getBrokerName(), "queue_id", r.getMessageQueue().getQueueId(),
                            "queue_offset", r.getQueueOffset(), "msg_id", r.getMsgId(),
                            "offset_msg_id", r.getOffsetMsgId(), "attempts", attempts.getOrDefault(keys, 0),
                            "calls", calls);
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            break;
                        }
                    } catch (Exception e) {
                        emit("kind", "send_error", "i", i, "t_ms", System.currentTimeMillis(), "error", e.toString(),
                            "attempts", attempts.getOrDefault(keys, 0), "calls", calls);
                    }
                    Thread.sleep(50);
                }
                i++;
                if (paceMs > 0) {
                    Thread.sleep(paceMs);
                }
            }
        } finally {
            producer.shutdown();
        }
        emit("kind", "done", "next", i);
    }
}
