// Apache RocketMQ's Java producer and push consumer with message traces on (enableMsgTrace, the
// default trace topic RMQ_SYS_TRACE_TOPIC), driven by tests/interop/cases_trace.py. Prints one JSON
// object per line.
//
//   TraceClient NAMESRV TOPIC PRODUCER_GROUP CONSUMER_GROUP COUNT SECONDS
//
// Sends COUNT messages synchronously ({"kind":"sent","msgId":...,"offsetMsgId":...,"status":...}),
// consumes them with a push consumer ({"kind":"recv","msgId":...}) until all arrived or SECONDS
// passed, then shuts both down (which flushes their trace dispatchers) and prints {"kind":"done"}.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TraceClient {
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
            run(args[0], args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String namesrv, String topic, String producerGroup, String consumerGroup, int count,
        int seconds) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(producerGroup, true, null);
        producer.setNamesrvAddr(namesrv);
        producer.start();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagT", "trace-key-" + i,
                ("trace-" + i).getBytes(StandardCharsets.UTF_8));
            SendResult r = producer.send(msg);
            emit("kind", "sent", "msgId", r.getMsgId(), "offsetMsgId", r.getOffsetMsgId(),
                "status", r.getSendStatus().name());
        }

        Set<String> seen = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(consumerGroup, true, null);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (seen.add(m.getMsgId())) {
                    emit("kind", "recv", "msgId", m.getMsgId());
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long end = System.currentTimeMillis() + seconds * 1000L;
        while (seen.size() < count && System.currentTimeMillis() < end) {
            Thread.sleep(100);
        }
        // The trace dispatchers send in batches; let the last ones go before shutting down.
        Thread.sleep(2000);
        consumer.shutdown();
        producer.shutdown();
        emit("kind", "done", "received", seen.size());
    }
}
