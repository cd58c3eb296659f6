// Apache RocketMQ's Java push consumer reading a backlog, driven by tests/interop/cases_slave_read.py
// (4.9.8 client): which broker serves each pull is the broker's choice (suggestWhichBrokerId), so the
// case reads the brokers' own counters; this program only receives. Prints one JSON object per line.
//
//   SlaveReadConsumer NAMESRV TOPIC GROUP COUNT SECONDS
//
// Consumes TOPIC from the first offset and prints {"kind":"recv","body":...} per message; stops once
// COUNT distinct bodies arrived ({"kind":"done"}), or at SECONDS.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class SlaveReadConsumer {
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
            run(args[0], args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String namesrv, String topic, String group, int count, int seconds) throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPullBatchSize(32);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (seen.add(body)) {
                    emit("kind", "recv", "body", body, "queue_id", m.getQueueId(),
                        "queue_offset", m.getQueueOffset());
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long end = System.currentTimeMillis() + seconds * 1000L;
        while (seen.size() < count && System.currentTimeMillis() < end) {
            Thread.sleep(100);
        }
        emit("kind", "done", "received", seen.size());
        consumer.shutdown();
    }
}
