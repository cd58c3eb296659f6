// Apache RocketMQ's Java producer in the offline import case (tests/interop/cases_migration_import.py): a
// stopped Apache store is imported into ours. Prints one JSON object per line.
//
//   MigrationImportClient produce NAMESRV TOPIC PREFIX COUNT BODY_BYTES DELAY_LEVEL
//   MigrationImportClient tx-half NAMESRV TOPIC PREFIX COUNT
//   MigrationImportClient tx-check NAMESRV TOPIC WANT SECONDS
//
// Sends COUNT messages one after the other, body "PREFIX-i|" padded with 'x' to BODY_BYTES, keys
// "PREFIX-key-i", with delay level DELAY_LEVEL (0: none), and prints per send {"kind":"sent","i","status",
// "broker","queue","queue_offset","msg_id"} (queue and queue_offset are the delay queue's for a delayed
// message) or {"kind":"send_error","i","error"}; then exits. Consumption uses MigrationHaClient.
// `tx-half` sends COUNT transactional messages (producer group migration_import_tx, keys "PREFIX-key-i")
// whose local transaction and check-backs answer UNKNOW, prints {"kind":"half","i","status","msg_id"} per
// send, and exits: the half messages stay pending in the broker's store.
// `tx-check` starts a transactional producer of the same group whose check-backs answer COMMIT_MESSAGE,
// sends one ordinary message "Y-0" to TOPIC (printed as "sent") and heartbeats at once to its brokers,
// prints {"kind":"checked","msg_id" (its UNIQ_KEY),"keys"} per check-back, and exits once WANT distinct messages were
// checked or after SECONDS.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.HashSet;
import java.util.Set;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
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
            if ("tx-half".equals(args[0])) {
                txHalf(args[1], args[2], args[3], Integer.parseInt(args[4]));
            } else if ("tx-check".equals(args[0])) {
                txCheck(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            } else {
                produce(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                    Integer.parseInt(args[6]));
            }
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

    static TransactionMQProducer txProducer(String namesrv, TransactionListener listener) throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer("migration_import_tx");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(5000);
        producer.setTransactionListener(listener);
        producer.start();
        return producer;
    }

    static void txHalf(String namesrv, String topic, String prefix, int count) throws Exception {
        TransactionMQProducer producer = txProducer(namesrv, new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.UNKNOW;
            }
        });
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagI", prefix + "-key-" + i,
                (prefix + "-" + i + "|").getBytes(StandardCharsets.UTF_8));
            SendResult r = producer.sendMessageInTransaction(msg, null);
            emit("kind", "half", "i", i, "status", r.getSendStatus().toString(), "msg_id", r.getMsgId());
        }
        producer.shutdown();
        emit("kind", "done");
    }

    static void txCheck(String namesrv, String topic, int want, int seconds) throws Exception {
        Set<String> checked = new HashSet<>();
        TransactionMQProducer producer = txProducer(namesrv, new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                synchronized (checked) {
                    checked.add(msg.getTransactionId() != null ? msg.getTransactionId() : msg.getMsgId());
                }
                emit("kind", "checked", "msg_id", msg.getProperty("UNIQ_KEY"), "keys", msg.getKeys());
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        // A producer that has sent nothing knows no broker to heartbeat to (the 5.5.0 client finds none
        // through TBW102): one ordinary send, "Y-0" with key "Y-key-0", gives it TOPIC's brokers, and the
        // heartbeat announces the group to them now rather than in 30 s.
        SendResult r = producer.send(new Message(topic, "TagI", "Y-key-0", "Y-0|".getBytes(StandardCharsets.UTF_8)));
        emit("kind", "sent", "i", 0, "status", r.getSendStatus().toString(), "msg_id", r.getMsgId());
        producer.getDefaultMQProducerImpl().getMqClientFactory().sendHeartbeatToAllBrokerWithLock();
        long end = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < end) {
            synchronized (checked) {
                if (checked.size() >= want) {
                    break;
                }
            }
            Thread.sleep(200);
        }
        // Let the last END_TRANSACTION (a oneway request) leave before the producer stops.
        Thread.sleep(1000);
        producer.shutdown();
        emit("kind", "done");
    }
}
