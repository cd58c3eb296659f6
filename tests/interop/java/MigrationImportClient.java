// Apache RocketMQ's Java producer in the offline import case (tests/interop/cases_migration_import.py): a
// stopped Apache store is imported into ours. Prints one JSON object per line.
//
//   MigrationImportClient produce NAMESRV TOPIC PREFIX COUNT BODY_BYTES DELAY_LEVEL
//
// Sends COUNT messages one after the other, body "PREFIX-i|" padded with 'x' to BODY_BYTES, keys
// "PREFIX-key-i", with delay level DELAY_LEVEL (0: none), and prints per send {"kind":"sent","i","status",
// "broker","queue","queue_offset","msg_id"} (queue and queue_offset are the delay queue's for a delayed
// message) or {"kind":"send_error","i","error"}; then exits. Consumption uses MigrationHaClient.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

public class MigrationImportClient {
    static void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        try {
            produce(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                Integer.parseInt(args[6]));
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void produce(String namesrv, String topic, String prefix, int count, int bodyBytes, int level)
        throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("migration_import_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(5000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        for (int i = 0; i < count; i++) {
            byte[] head = (prefix + "-" + i + "|").getBytes(StandardCharsets.UTF_8);
            byte[] body = new byte[Math.max(bodyBytes, head.length)];
            Arrays.fill(body, (byte) 'x');
            System.arraycopy(head, 0, body, 0, head.length);
            Message msg = new Message(topic, "TagI", prefix + "-key-" + i, body);
            if (level > 0) {
                msg.setDelayTimeLevel(level);
            }
            try {
                SendResult r = producer.send(msg);
                emit("kind", "sent", "i", i, "status", r.getSendStatus().toString(),
                    "broker", r.getMessageQueue().getBrokerName(), "queue", r.getMessageQueue().getQueueId(),
                    "queue_offset", r.getQueueOffset(), "msg_id", r.getMsgId());
            } catch (Exception e) {
                emit("kind", "send_error", "i", i, "error", e.toString());
            }
        }
        producer.shutdown();
        emit("kind", "done");
    }
}
