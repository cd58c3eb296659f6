// Apache RocketMQ's Java client (4.9.8, or 5.x where the case says) signing as an ACL 2.0 user
// (AclClientRPCHook: AccessKey = username, SecretKey = password), driven by
// tests/interop/cases_acl2.py. Prints one JSON object per line.
//
//   Acl2Client send NAMESRV TOPIC USER PASSWORD COUNT PREFIX
//   Acl2Client consume NAMESRV TOPIC GROUP USER PASSWORD COUNT SECONDS
//
// USER "-" sends unsigned. `send` prints {"kind":"sent","status":...} or {"kind":"refused","code":...,
// "message":...} per message; `consume` (a push consumer from the first offset) prints
// {"kind":"recv","body":...} per new body and stops at COUNT bodies or SECONDS.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

public class Acl2Client {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    static RPCHook hook(String user, String password) {
        return "-".equals(user) ? null : new AclClientRPCHook(new SessionCredentials(user, password));
    }

    public static void main(String[] args) throws Exception {
        try {
            if ("send".equals(args[0])) {
                send(args[1], args[2], args[3], args[4], Integer.parseInt(args[5]), args[6]);
            } else {
                consume(args[1], args[2], args[3], args[4], args[5], Integer.parseInt(args[6]),
                    Integer.parseInt(args[7]));
            }
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void send(String namesrv, String topic, String user, String password, int count, String prefix)
        throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("acl2_producer_" + prefix, hook(user, password));
        producer.setNamesrvAddr(namesrv);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(5000);
        producer.start();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, (prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
            try {
                SendResult r = producer.send(msg);
                emit("kind", "sent", "i", i, "status", r.getSendStatus().toString());
            } catch (MQBrokerException e) {
                emit("kind", "refused", "i", i, "code", e.getResponseCode(), "message", e.getErrorMessage());
            } catch (MQClientException e) {
                // The client wraps the broker's refusal; its answer is the cause.
                Throwable cause = e.getCause();
                if (cause instanceof MQBrokerException) {
                    MQBrokerException b = (MQBrokerException) cause;
                    emit("kind", "refused", "i", i, "code", b.getResponseCode(), "message", b.getErrorMessage());
                } else {
                    emit("kind", "refused", "i", i, "code", e.getResponseCode(), "message", e.getErrorMessage());
                }
            }
        }
        producer.shutdown();
    }

    static void consume(String namesrv, String topic, String group, String user, String password, int count,
        int seconds) throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer =
            new DefaultMQPushConsumer(group, hook(user, password), new AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (seen.add(body)) {
                    emit("kind", "recv", "body", body);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long end = System.currentTimeMillis() + seconds * 1000L;
        while (seen.size() < count && System.currentTimeMillis() < end) {
            Thread.sleep(100);
        }
        consumer.shutdown();
        emit("kind", "done", "received", seen.size());
    }
}
