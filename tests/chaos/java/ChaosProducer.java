// A producer for the chaos harness (tests/chaos/java_producer.py), with Apache RocketMQ's Java client:
// sends one message at a time through DefaultMQProducer (its own routing, retries and timeouts) and
// prints one JSON object per operation, in the history format of tests/chaos/run.py.
//
//   ChaosProducer NAMESRV TOPIC KEY_PREFIX POLL_MS STOP_FILE
//
// Every message gets a key of its own (KEY_PREFIX-n) and is sent once by this program (the client's
// own retries, retryTimesWhenSendFailed 2, may store it more than once: duplicates are allowed).
// Lines: `invoke` before send(); `ok` with the SendResult's brokerName, queue, offset and msgId and the broker
// address of the attempt that answered (from a SendMessageHook); `fail` for an answer other than
// SEND_OK or an MQBrokerException (the broker answered an error: it may still hold the message, as
// after FLUSH_SLAVE_TIMEOUT); `unknown` for any other exception (a timeout: stored or not). Each line's
// `mono` is System.nanoTime() (CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic()).
// POLL_MS sets pollNameServerInterval (the client's route poll, 30000 by default). Stops when STOP_FILE
// exists or its standard input closes (the runner went away).
import com.alibaba.fastjson.JSON;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.hook.SendMessageHook;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

public class ChaosProducer {
    static volatile boolean orphaned = false;

    static void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        m.put("mono", System.nanoTime());
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        try {
            run(args[0], args[1], args[2], Integer.parseInt(args[3]), new File(args[4]));
        } catch (Exception e) {
            emit("type", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String namesrv, String topic, String prefix, int pollMs, File stop) throws Exception {
        // Message key -> the broker address of its latest attempt.
        Map<String, String> lastAddr = new ConcurrentHashMap<>();
        DefaultMQProducer producer = new DefaultMQProducer("chaos-java-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setPollNameServerInterval(pollMs);
        producer.setRetryTimesWhenSendFailed(2);
        producer.setSendMsgTimeout(2000);
        producer.getDefaultMQProducerImpl().registerSendMessageHook(new SendMessageHook() {
            @Override
            public String hookName() {
                return "last-address";
            }

            @Override
            public void sendMessageBefore(SendMessageContext context) {
                lastAddr.put(context.getMessage().getKeys(), context.getBrokerAddr());
            }

            @Override
            public void sendMessageAfter(SendMessageContext context) {
            }
        });
        producer.start();
        emit("type", "started");
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // nothing is sent on standard input: its end means the runner is gone
                }
            } catch (java.io.IOException e) {
                // the same
            }
            orphaned = true;
        });
        watcher.setDaemon(true);
        watcher.start();
        int n = 0;
        try {
            while (!stop.exists() && !orphaned) {
                String key = prefix + "-" + n++;
                Message msg = new Message(topic, "", key, ("chaos " + key).getBytes(StandardCharsets.UTF_8));
                emit("type", "invoke", "key", key);
                try {
                    SendResult r = producer.send(msg);
                    String addr = lastAddr.remove(key);
                    if (r.getSendStatus() == SendStatus.SEND_OK) {
                        emit("type", "ok", "key", key, "addr", addr, "broker", r.getMessageQueue().getBrokerName(),
                            "queue", r.getMessageQueue().getQueueId(), "offset", r.getQueueOffset(), "msgId", r.getMsgId());
                    } else {
                        emit("type", "fail", "key", key, "error", r.getSendStatus().name(), "addr", addr);
                        Thread.sleep(50);
                    }
                } catch (MQBrokerException e) {
                    lastAddr.remove(key);
                    emit("type", "fail", "key", key, "code", e.getResponseCode(), "error", e.getErrorMessage());
                    Thread.sleep(50);
                } catch (Exception e) {
                    lastAddr.remove(key);
                    emit("type", "unknown", "key", key, "error", e.toString());
                    Thread.sleep(50);
                }
            }
        } finally {
            producer.shutdown();
        }
        emit("type", "done", "next", n);
    }
}
