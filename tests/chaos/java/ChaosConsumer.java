// A consumer for the chaos harness (tests/chaos/java_clients.py), with Apache RocketMQ's Java client: a
// DefaultMQPushConsumer of its own group, clustering mode, subscribed to the whole topic, that prints
// one JSON object per message it is given (its own rebalancing, long polling, offset commits every
// 5 s and broker choice, master or slave, as the broker suggests).
//
//   ChaosConsumer NAMESRV TOPIC GROUP POLL_MS STOP_FILE
//
// Lines: `consume` with the message's key, brokerName (of the listener's queue), queue id, queue offset and the address of the broker that
// stored it (MessageExt.getStoreHost); `mono` is System.nanoTime() (CLOCK_MONOTONIC on Linux, the clock
// of Python's time.monotonic()). Every listener call answers CONSUME_SUCCESS. POLL_MS sets
// pollNameServerInterval (the client's route poll, 30000 by default), heartbeatBrokerInterval (30000)
// and the rebalance period (the system property rocketmq.client.rebalance.waitInterval, 20000): a
// restarted broker knows no consumer of the group until the next heartbeat, and until then answers the
// rebalance's GET_CONSUMER_LIST_BY_GROUP with "no consumer for this group" (Apache's broker does the
// same), so with the defaults the group can stay without queues for 30 s after any restart. Stops when
// STOP_FILE exists or its standard input closes (the runner went away).
import com.alibaba.fastjson.JSON;
import java.io.File;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class ChaosConsumer {
    static volatile boolean orphaned = false;

    static synchronized void emit(Object... kv) {
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

    static String address(java.net.SocketAddress host) {
        if (host instanceof InetSocketAddress) {
            InetSocketAddress a = (InetSocketAddress) host;
            return a.getAddress().getHostAddress() + ":" + a.getPort();
        }
        return String.valueOf(host);
    }

    static DefaultMQPushConsumer consumer(String namesrv, String topic, String group, int pollMs) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setPollNameServerInterval(pollMs);
        consumer.setHeartbeatBrokerInterval(pollMs);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                emit("type", "consume", "key", m.getKeys(), "broker", context.getMessageQueue().getBrokerName(),
                    "queue", m.getQueueId(), "offset", m.getQueueOffset(),
                    "addr", address(m.getStoreHost()));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return consumer;
    }

    static void run(String namesrv, String topic, String group, int pollMs, File stop) throws Exception {
        // Read once, when the client's RebalanceService class loads: set before any client class is used.
        System.setProperty("rocketmq.client.rebalance.waitInterval", Integer.toString(pollMs));
        // start() fails when no name server answers (a partition at the start of a seed); an application
        // starts it again, with a new consumer (a failed one cannot be started twice).
        DefaultMQPushConsumer consumer = null;
        while (consumer == null && !stop.exists()) {
            DefaultMQPushConsumer c = consumer(namesrv, topic, group, pollMs);
            try {
                c.start();
                consumer = c;
            } catch (Exception e) {
                emit("type", "start_failed", "error", e.toString());
                c.shutdown();
                Thread.sleep(500);
            }
        }
        if (consumer == null) {
            emit("type", "done");
            return;
        }
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
        try {
            while (!stop.exists() && !orphaned) {
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        emit("type", "done");
    }
}
