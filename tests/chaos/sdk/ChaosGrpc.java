// The gRPC clients of the chaos harness (tests/chaos/sdk_clients.py), with apache/rocketmq-clients' Java SDK
// (Maven Central rocketmq-client-java 5.2.0) talking to the proxy: in one JVM, one thread per role, each
// printing one JSON object per operation (the history format of tests/chaos/run.py).
//
//   ChaosGrpc ENDPOINT TOPIC FIFO_TOPIC KEY_PREFIX GROUP FIFO_GROUP INVISIBLE_MS SKIP_EVERY STOP_FILE
//
// Roles (each line carries `role`):
// - `producer`: sends one NORMAL message at a time to TOPIC, key KEY_PREFIX-n. `invoke` before send(); `ok`
//   with the receipt's message id and queue offset (SendReceiptImpl); `fail` when
//   the proxy answered a refusal (a 4xx-like status: bad request, not found, forbidden, too many requests,
//   unsupported); `unknown` for anything else (timeouts, internal errors, a lost connection: stored or
//   not). The SDK retries a failed send itself (maxAttempts 3), so a message may be stored more than once.
//   The offset is the proxy's answer; the receipt's queue (`sdk_broker`, `sdk_queue`) is only the one the
//   SDK asked for: the proxy picks the queue itself (round robin, FIFO by the hash of the message group),
//   and its answer does not say which.
// - `fifo-producer`: the same for FIFO_TOPIC (message type FIFO), message group KEY_PREFIX-f-g (g of 8,
//   round-robin), key KEY_PREFIX-f-g-seq; lines carry `group` and `seq` (seq counts the group's sends).
// - `consumer`: a SimpleConsumer of GROUP on TOPIC: receive(32, INVISIBLE_MS), a `consume` line per
//   message (key, message id, broker, queue, offset, delivery attempt, `retry` when the receipt handle
//   names the pop retry topic), then the batch's acks at once (ackAsync); an `ack` line per outcome.
// - `fifo-consumer`: a SimpleConsumer of FIFO_GROUP (an orderly group) on FIFO_TOPIC: receive(8,
//   INVISIBLE_MS), a `deliver` line per message (with `group`, `seq`, `invisible_ms`), then acks them in
//   order, except every SKIP_EVERY-th first delivery (0: none), left unacked so that it comes back once its
//   invisible time is over and holds its queue until then; an `ack` line per ack. The SDK learns from
//   the proxy's settings that the group is FIFO.
// Each line's `mono` is System.nanoTime() (CLOCK_MONOTONIC on Linux, Python's time.monotonic()); lines are
// printed under one lock, in the order things happened. Stops when STOP_FILE exists or its standard input
// closes (the runner went away); the producers alone stop when STOP_FILE.producers exists (the consumers go
// on draining).

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.java.impl.producer.SendReceiptImpl;
import org.apache.rocketmq.client.java.message.MessageViewImpl;

public final class ChaosGrpc {
    static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    static final int FIFO_GROUPS = 8;
    static volatile boolean stopping = false;
    static volatile boolean producersStopping = false;

    private ChaosGrpc() {
    }

    static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        StringBuilder b = new StringBuilder("\"");
        for (char ch : v.toString().toCharArray()) {
            if (ch == '"' || ch == '\\') {
                b.append('\\').append(ch);
            } else if (ch < 0x20) {
                b.append(String.format("\\u%04x", (int) ch));
            } else {
                b.append(ch);
            }
        }
        return b.append('"').toString();
    }

    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        m.put("mono", System.nanoTime());
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (b.length() > 1) {
                b.append(", ");
            }
            b.append(json(e.getKey())).append(": ").append(json(e.getValue()));
        }
        System.out.println(b.append('}'));
        System.out.flush();
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            emit("type", "error", "error", e.toString());
            Runtime.getRuntime().halt(1);
        }
        // The SDK's threads would keep the process alive.
        Runtime.getRuntime().halt(0);
    }

    static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(3)).build();
    }

    static void run(String[] a) throws Exception {
        String endpoint = a[0];
        String topic = a[1];
        String fifoTopic = a[2];
        String prefix = a[3];
        String group = a[4];
        String fifoGroup = a[5];
        long invisibleMs = Long.parseLong(a[6]);
        int skipEvery = Integer.parseInt(a[7]);
        File stop = new File(a[8]);
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // nothing comes on standard input: its end means the runner is gone
                }
            } catch (java.io.IOException e) {
                // the same
            }
            stopping = true;
        });
        watcher.setDaemon(true);
        watcher.start();
        List<Thread> roles = new ArrayList<>();
        roles.add(role("producer", () -> produce(endpoint, topic, prefix, false)));
        roles.add(role("fifo-producer", () -> produce(endpoint, fifoTopic, prefix + "-f", true)));
        roles.add(role("consumer", () -> consume(endpoint, topic, group, invisibleMs)));
        roles.add(role("fifo-consumer", () -> consumeFifo(endpoint, fifoTopic, fifoGroup, invisibleMs, skipEvery)));
        emit("type", "started");
        File stopProducers = new File(a[8] + ".producers");
        while (!stop.exists() && !stopping) {
            producersStopping = producersStopping || stopProducers.exists();
            Thread.sleep(100);
        }
        stopping = true;
        for (Thread t : roles) {
            t.join(10000);
        }
        emit("type", "done");
    }

    interface Body {
        void run() throws Exception;
    }

    static Thread role(String name, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                emit("type", "error", "role", name, "error", e.toString());
            }
        }, name);
        t.start();
        return t;
    }

    /** fail: the proxy refused the message; anything else leaves the send unknown. */
    static boolean refused(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            switch (c.getClass().getSimpleName()) {
                case "BadRequestException":
                case "NotFoundException":
                case "ForbiddenException":
                case "UnauthorizedException":
                case "TooManyRequestsException":
                case "UnsupportedException":
                case "PayloadTooLargeException":
                    return true;
                default:
                    break;
            }
        }
        return false;
    }

    static void produce(String endpoint, String topic, String prefix, boolean fifo) throws Exception {
        String role = fifo ? "fifo-producer" : "producer";
        Producer p = null;
        while (p == null && !stopping) {
            try {
                p = PROVIDER.newProducerBuilder().setClientConfiguration(config(endpoint)).setTopics(topic).build();
            } catch (ClientException | IllegalStateException e) {
                // The proxy or the route is not there yet (a fault at the start: the SDK's start-up
                // service fails with an IllegalStateException when the proxy cannot be reached): try again.
                emit("type", "start_failed", "role", role, "error", e.toString());
                Thread.sleep(500);
            }
        }
        int[] seqs = new int[FIFO_GROUPS];
        int n = 0;
        while (!stopping && !producersStopping) {
            String key;
            String mgroup = null;
            int seq = 0;
            if (fifo) {
                int g = n % FIFO_GROUPS;
                seq = seqs[g]++;
                mgroup = prefix + "-" + g;
                key = mgroup + "-" + seq;
            } else {
                key = prefix + "-" + n;
            }
            n++;
            org.apache.rocketmq.client.apis.message.MessageBuilder b = PROVIDER.newMessageBuilder().setTopic(topic)
                .setKeys(key).setBody(("chaos " + key).getBytes(StandardCharsets.UTF_8));
            if (fifo) {
                b.setMessageGroup(mgroup);
            }
            Message msg = b.build();
            emit("type", "invoke", "role", role, "key", key, "group", mgroup, "seq", seq);
            try {
                SendReceipt r = p.send(msg);
                String broker = null;
                Integer queue = null;
                Long offset = null;
                if (r instanceof SendReceiptImpl) {
                    SendReceiptImpl ri = (SendReceiptImpl) r;
                    broker = ri.getMessageQueue().getBroker().getName();
                    queue = ri.getMessageQueue().getQueueId();
                    offset = ri.getOffset();
                }
                emit("type", "ok", "role", role, "key", key, "group", mgroup, "seq", seq, "msgId",
                    r.getMessageId().toString(), "sdk_broker", broker, "sdk_queue", queue, "offset", offset);
            } catch (Exception e) {
                emit("type", refused(e) ? "fail" : "unknown", "role", role, "key", key, "group", mgroup, "seq", seq,
                    "error", e.toString());
                Thread.sleep(50);
            }
        }
        if (p != null) {
            p.close();
        }
    }

    static SimpleConsumer consumer(String endpoint, String topic, String group) throws InterruptedException {
        while (!stopping) {
            try {
                return PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config(endpoint))
                    .setConsumerGroup(group)
                    .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
                    // 1 s, not 2: the SDK rotates its receives over every queue of the route,
                    // so an empty broker's queues cost this long each per round.
                    .setAwaitDuration(Duration.ofSeconds(1)).build();
            } catch (ClientException | IllegalStateException e) {
                emit("type", "start_failed", "group", group, "error", e.toString());
                Thread.sleep(500);
            }
        }
        return null;
    }

    /** Fields of a received message: key, id, broker, queue, offset, attempt and the retry mark. */
    static List<Object> fields(MessageView m) {
        String key = m.getKeys().isEmpty() ? null : m.getKeys().iterator().next();
        String broker = null;
        Integer queue = null;
        Long offset = null;
        boolean retry = false;
        if (m instanceof MessageViewImpl) {
            MessageViewImpl v = (MessageViewImpl) m;
            offset = v.getOffset();
            // The proxy's receipt handle: ckOffset popTime invisible reviveQid topicType broker queue offset ...
            String[] f = v.getReceiptHandle().split(" ");
            if (f.length > 7) {
                retry = !"0".equals(f[4]);
                broker = f[5];
                try {
                    queue = Integer.parseInt(f[6]);
                } catch (NumberFormatException e) {
                    queue = null;
                }
            }
        }
        List<Object> out = new ArrayList<>(java.util.Arrays.asList("key", key, "msgId", m.getMessageId().toString(),
            "broker", broker, "queue", queue, "offset", offset, "attempt", m.getDeliveryAttempt(), "retry", retry));
        return out;
    }

    static Object[] line(List<Object> head, List<Object> fields) {
        List<Object> all = new ArrayList<>(head);
        all.addAll(fields);
        return all.toArray();
    }

    static void ack(SimpleConsumer c, String role, MessageView m, String key) {
        try {
            c.ack(m);
            emit("type", "ack", "role", role, "key", key, "ok", true);
        } catch (Exception e) {
            emit("type", "ack", "role", role, "key", key, "ok", false, "error", e.toString());
        }
    }

    static void consume(String endpoint, String topic, String group, long invisibleMs) throws Exception {
        SimpleConsumer c = consumer(endpoint, topic, group);
        while (!stopping) {
            List<MessageView> got;
            try {
                got = c.receive(32, Duration.ofMillis(invisibleMs));
            } catch (Exception e) {
                emit("type", "receive_failed", "role", "consumer", "error", e.toString());
                Thread.sleep(200);
                continue;
            }
            // Acked asynchronously, all of a batch at once: one round trip per message would make this
            // group fall behind the producers.
            List<java.util.concurrent.CompletableFuture<Void>> acks = new ArrayList<>();
            for (MessageView m : got) {
                List<Object> f = fields(m);
                emit(line(java.util.Arrays.asList("type", "consume", "role", "consumer"), f));
                String key = (String) f.get(1);
                acks.add(c.ackAsync(m).whenComplete((v, e) -> {
                    if (e == null) {
                        emit("type", "ack", "role", "consumer", "key", key, "ok", true);
                    } else {
                        emit("type", "ack", "role", "consumer", "key", key, "ok", false, "error", e.toString());
                    }
                }));
            }
            for (java.util.concurrent.CompletableFuture<Void> a : acks) {
                try {
                    a.join();
                } catch (java.util.concurrent.CompletionException e) {
                    // already printed
                }
            }
        }
        if (c != null) {
            c.close();
        }
    }

    static void consumeFifo(String endpoint, String topic, String group, long invisibleMs, int skipEvery)
        throws Exception {
        SimpleConsumer c = consumer(endpoint, topic, group);
        int firsts = 0;
        int batch = 0;
        while (!stopping) {
            List<MessageView> got;
            try {
                got = c.receive(8, Duration.ofMillis(invisibleMs));
            } catch (Exception e) {
                emit("type", "receive_failed", "role", "fifo-consumer", "error", e.toString());
                Thread.sleep(200);
                continue;
            }
            // Every delivery is printed before any ack of the batch: the lines are the order they came in.
            // A message left unacked holds the rest of its group in this batch unacked too, as an orderly
            // consumer that stops at a failure does: they come back after it.
            List<MessageView> toAck = new ArrayList<>();
            java.util.Set<String> held = new java.util.HashSet<>();
            batch++;
            for (MessageView m : got) {
                List<Object> f = fields(m);
                String key = (String) f.get(1);
                String mgroup = m.getMessageGroup().orElse(null);
                int seq = -1;
                int dash = key == null ? -1 : key.lastIndexOf('-');
                if (dash >= 0) {
                    try {
                        seq = Integer.parseInt(key.substring(dash + 1));
                    } catch (NumberFormatException e) {
                        seq = -1;
                    }
                }
                boolean skip = held.contains(String.valueOf(mgroup));
                if (m.getDeliveryAttempt() == 1) {
                    firsts++;
                    skip = skip || (skipEvery > 0 && firsts % skipEvery == 0);
                }
                if (skip) {
                    held.add(String.valueOf(mgroup));
                }
                emit(line(java.util.Arrays.asList("type", "deliver", "role", "fifo-consumer", "group", mgroup, "seq",
                    seq, "batch", batch, "invisible_ms", invisibleMs, "skip", skip), f));
                if (!skip) {
                    toAck.add(m);
                }
            }
            for (MessageView m : toAck) {
                ack(c, "fifo-consumer", m, m.getKeys().isEmpty() ? null : m.getKeys().iterator().next());
            }
        }
        if (c != null) {
            c.close();
        }
    }
}
