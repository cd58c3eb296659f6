/*
 * Scenarios run with apache/rocketmq-clients' Java SDK (Maven Central org.apache.rocketmq:rocketmq-client-java
 * 5.2.0, installed by tests/apache/setup.sh) against our proxy, as py_sdk.py runs them with the Python SDK:
 *
 *     tests/apache/java.sh rocketmq-client-java-5.2.0 -cp tests/sdk5/java/build/classes JavaSdk \
 *         <scenario> <proxy endpoint> <topic> [args]
 *
 * Each scenario checks what it sees and exits non-zero with the reason on stderr ("FAIL: ...") when something
 * is wrong; on success it prints one JSON line (run.py checks it further). SDK5_TLS=1 / 0 turns the SDK's TLS
 * on / off; unset, the SDK's default (TLS on, any certificate trusted) is kept.
 */

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.ProducerBuilder;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;
import org.apache.rocketmq.client.java.message.MessageViewImpl;

public final class JavaSdk {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    private JavaSdk() {
    }

    // ---- failing and printing ----

    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.err.flush();
        // The SDK's threads would keep the process alive; nothing of theirs needs to run any more.
        Runtime.getRuntime().halt(1);
    }

    static void check(boolean cond, String msg) {
        if (!cond) {
            fail(msg);
        }
    }

    /** A JSON value: strings, numbers, booleans, null, maps and collections. */
    static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String) {
            StringBuilder b = new StringBuilder("\"");
            for (char ch : ((String) v).toCharArray()) {
                switch (ch) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default:
                        if (ch < 0x20) {
                            b.append(String.format("\\u%04x", (int) ch));
                        } else {
                            b.append(ch);
                        }
                }
            }
            return b.append('"').toString();
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        if (v instanceof Map) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (b.length() > 1) {
                    b.append(", ");
                }
                b.append(json(String.valueOf(e.getKey()))).append(": ").append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        if (v instanceof Collection) {
            StringBuilder b = new StringBuilder("[");
            for (Object o : (Collection<?>) v) {
                if (b.length() > 1) {
                    b.append(", ");
                }
                b.append(json(o));
            }
            return b.append(']').toString();
        }
        return json(v.toString());
    }

    /** {k1: v1, k2: v2, ...} in that order. */
    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static void print(Map<String, Object> result) {
        System.out.println(json(result));
        System.out.flush();
    }

    static void sleep(long ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    static double now() {
        return System.currentTimeMillis() / 1000.0;
    }

    // ---- SDK plumbing ----

    static ClientConfiguration config(String endpoint, String ak, String sk) {
        ClientConfigurationBuilder b = ClientConfiguration.newBuilder().setEndpoints(endpoint)
            .setRequestTimeout(Duration.ofSeconds(10));
        String tls = System.getenv("SDK5_TLS");
        if ("1".equals(tls)) {
            b.enableSsl(true);
        } else if ("0".equals(tls)) {
            b.enableSsl(false);
        }
        if (ak != null) {
            b.setCredentialProvider(new StaticSessionCredentialsProvider(ak, sk));
        }
        return b.build();
    }

    static ClientConfiguration config(String endpoint) {
        return config(endpoint, null, null);
    }

    static Producer producer(ClientConfiguration cfg, TransactionChecker checker, String... topics)
        throws ClientException {
        ProducerBuilder b = PROVIDER.newProducerBuilder().setClientConfiguration(cfg).setTopics(topics);
        if (checker != null) {
            b.setTransactionChecker(checker);
        }
        return b.build();
    }

    static Producer producer(String endpoint, String... topics) throws ClientException {
        return producer(config(endpoint), null, topics);
    }

    static MessageBuilder message(String topic, String body) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    static SimpleConsumer consumer(String endpoint, String group, String topic) throws ClientException {
        return PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config(endpoint))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic,
                new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(3))
            .build();
    }

    static String body(MessageView m) {
        return StandardCharsets.UTF_8.decode(m.getBody().duplicate()).toString();
    }

    /** Every received message: its body digest matched (the SDK marks it corrupted otherwise). */
    static void checkIntact(MessageView m) {
        check(m instanceof MessageViewImpl, "not the SDK's message view: " + m.getClass());
        check(!((MessageViewImpl) m).isCorrupted(), body(m) + ": the SDK found the body digest wrong");
    }

    /** Receives until `want` distinct bodies were seen or the deadline passes: {body: [MessageView]}. */
    static Map<String, List<MessageView>> receiveUntil(SimpleConsumer c, int want, double deadlineS,
        int invisibleS, boolean ack) throws ClientException {
        Map<String, List<MessageView>> seen = new LinkedHashMap<>();
        double end = now() + deadlineS;
        while (now() < end && seen.size() < want) {
            for (MessageView m : c.receive(32, Duration.ofSeconds(invisibleS))) {
                checkIntact(m);
                seen.computeIfAbsent(body(m), k -> new ArrayList<>()).add(m);
                if (ack) {
                    c.ack(m);
                }
            }
        }
        return seen;
    }

    /** "broker/queue" of a received message, from the proxy's receipt handle (extraInfo fields). */
    static String handleQueue(MessageView m) {
        String[] f = ((MessageViewImpl) m).getReceiptHandle().split(" ");
        return f[5] + "/" + f[6];
    }

    // ---- scenarios ----

    static void normal(String endpoint, String topic, String group) throws Exception {
        ClientConfiguration cfg = config(endpoint);
        Producer p = producer(cfg, null, topic);
        int n = 20;
        Map<String, String> ids = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            Message msg = message(topic, "normal-" + i).setTag("TagA").setKeys("k" + i, "all")
                .addProperty("seq", String.valueOf(i)).build();
            SendReceipt r = p.send(msg);
            check(r.getMessageId() != null && !r.getMessageId().toString().isEmpty(), "send " + i + " has no id");
            ids.put("normal-" + i, r.getMessageId().toString());
        }
        p.close();
        SimpleConsumer c = consumer(endpoint, group, topic);
        Map<String, List<MessageView>> seen = receiveUntil(c, n, 40, 15, true);
        check(seen.size() == n, "received " + seen.size() + " of " + n + " messages: " + new TreeSet<>(seen.keySet()));
        for (Map.Entry<String, List<MessageView>> e : seen.entrySet()) {
            String b = e.getKey();
            MessageView m = e.getValue().get(0);
            check(ids.containsKey(b), "unexpected message " + b);
            String i = b.split("-")[1];
            check(m.getTopic().equals(topic), b + ": topic " + m.getTopic());
            check(m.getTag().orElse("").equals("TagA"), b + ": tag " + m.getTag());
            check(new HashSet<>(m.getKeys()).equals(new HashSet<>(Arrays.asList("k" + i, "all"))),
                b + ": keys " + m.getKeys());
            check(i.equals(m.getProperties().get("seq")), b + ": properties " + m.getProperties());
            check(m.getMessageId().toString().equals(ids.get(b)),
                b + ": message id " + m.getMessageId() + ", sent as " + ids.get(b));
            check(m.getDeliveryAttempt() == 1, b + ": delivery attempt " + m.getDeliveryAttempt());
            check(e.getValue().size() == 1, b + ": delivered " + e.getValue().size() + " times");
            check(!m.getMessageGroup().isPresent(), b + ": message group " + m.getMessageGroup());
            check(m.getBornTimestamp() > 0, b + ": born timestamp " + m.getBornTimestamp());
        }
        // Acked messages stay acked: nothing comes back after their invisible time.
        sleep(1000);
        Map<String, List<MessageView>> again = receiveUntil(c, 1, 5, 15, true);
        check(again.isEmpty(), "acked messages were delivered again: " + again.keySet());
        c.close();
        print(obj("sent", n, "received", seen.size(), "tls", cfg.isSslEnabled()));
    }

    static final int FIFO_GROUPS = 4;
    static final int FIFO_PER_GROUP = 6;

    /**
     * FIFO_PER_GROUP messages in each of FIFO_GROUPS message groups; two consumers of one orderly group receive
     * them one at a time (invisible 2 s) and ack each, except the first delivery of `java-0:0`. Prints the
     * delivery log for run.py's order checks, and the queues each group was received from.
     */
    static void fifo(String endpoint, String topic, String group) throws Exception {
        Producer p = producer(endpoint, topic);
        for (int i = 0; i < FIFO_PER_GROUP; i++) {
            for (int g = 0; g < FIFO_GROUPS; g++) {
                p.send(message(topic, "java-" + g + ":" + i).setMessageGroup("java-" + g).build());
            }
        }
        p.close();
        List<SimpleConsumer> consumers = Arrays.asList(consumer(endpoint, group, topic),
            consumer(endpoint, group, topic));
        List<Object> log = new ArrayList<>();
        Map<String, Set<String>> queues = new TreeMap<>();
        int acked = 0;
        boolean held = false;
        double end = now() + 60;
        while (now() < end && acked < FIFO_GROUPS * FIFO_PER_GROUP) {
            for (int n = 0; n < consumers.size(); n++) {
                SimpleConsumer c = consumers.get(n);
                for (MessageView m : c.receive(1, Duration.ofSeconds(2))) {
                    checkIntact(m);
                    String b = body(m);
                    queues.computeIfAbsent(b.split(":")[0], k -> new TreeSet<>()).add(handleQueue(m));
                    boolean ack = held || !b.equals("java-0:0");
                    held = held || b.equals("java-0:0");
                    log.add(obj("c", n, "body", b, "group", m.getMessageGroup().orElse(null),
                        "attempt", m.getDeliveryAttempt(), "ack", ack));
                    if (ack) {
                        c.ack(m);
                        acked++;
                    }
                }
            }
        }
        for (SimpleConsumer c : consumers) {
            c.close();
        }
        print(obj("log", log, "queues", queues));
    }

    static void delay(String endpoint, String topic, String group) throws Exception {
        Producer p = producer(endpoint, topic);
        long due = System.currentTimeMillis() + 4000;
        p.send(message(topic, "delayed").setDeliveryTimestamp(due).build());
        p.send(message(topic, "now").build());
        p.close();
        SimpleConsumer c = consumer(endpoint, group, topic);
        Map<String, Long> got = new TreeMap<>();
        Map<String, Long> stamped = new TreeMap<>();
        double end = now() + 40;
        while (now() < end && got.size() < 2) {
            for (MessageView m : c.receive(32, Duration.ofSeconds(15))) {
                checkIntact(m);
                got.put(body(m), System.currentTimeMillis());
                m.getDeliveryTimestamp().ifPresent(t -> stamped.put(body(m), t));
                c.ack(m);
            }
        }
        c.close();
        check(got.keySet().equals(new TreeSet<>(Arrays.asList("delayed", "now"))), "received " + got.keySet());
        check(got.get("delayed") >= due, "the delayed message came " + (due - got.get("delayed")) + " ms early");
        check(Long.valueOf(due).equals(stamped.get("delayed")),
            "the delayed message carries delivery timestamp " + stamped.get("delayed") + ", sent with " + due);
        check(got.get("now") < due, "the message without delivery time waited for the delayed one");
        print(obj("late_ms", got.get("delayed") - due));
    }

    /**
     * Two delay messages due in 4 s; one is recalled by the handle its send answered (RocketMQ 5.3.2+'s
     * Producer.recallMessage): only the other is received, also well past the due time. A made-up handle is
     * refused.
     */
    static void recall(String endpoint, String topic, String group) throws Exception {
        Producer p = producer(endpoint, topic);
        long due = System.currentTimeMillis() + 4000;
        SendReceipt gone = p.send(message(topic, "recalled").setDeliveryTimestamp(due).build());
        SendReceipt kept = p.send(message(topic, "kept").setDeliveryTimestamp(due).build());
        String handle = gone.getRecallHandle();
        check(handle != null && !handle.isEmpty(), "a delay message's send receipt has no recall handle");
        check(kept.getRecallHandle() != null && !kept.getRecallHandle().isEmpty(), "the second has no handle");
        String recalledId = p.recallMessage(topic, handle).getMessageId().toString();
        check(recalledId.equals(gone.getMessageId().toString()),
            "the recall answered message id " + recalledId + ", sent as " + gone.getMessageId());
        String refused = null;
        try {
            p.recallMessage(topic, "bm90IGEgaGFuZGxl");
        } catch (ClientException e) {
            refused = e.getMessage();
        }
        check(refused != null, "a made-up handle was accepted");
        p.close();
        SimpleConsumer c = consumer(endpoint, group, topic);
        List<String> got = new ArrayList<>();
        // Past the due time by 4 s more than the delivery bound, so a late recalled message shows too.
        double end = now() + 12;
        while (now() < end) {
            for (MessageView m : c.receive(32, Duration.ofSeconds(4))) {
                got.add(body(m));
                c.ack(m);
            }
        }
        c.close();
        check(got.equals(Collections.singletonList("kept")), "received " + got + ", want only [kept]");
        print(obj("recalled", recalledId, "refused", refused));
    }

    /**
     * commit is delivered, rollback never; of two half messages left open, the checker answers UNKNOWN at the
     * first check of each, then COMMIT for `tx-orphan` and ROLLBACK for `tx-orphan-rollback`.
     */
    static void transaction(String endpoint, String topic, String group) throws Exception {
        List<String> checked = new CopyOnWriteArrayList<>();
        Map<String, Integer> checks = new ConcurrentHashMap<>();
        TransactionChecker checker = m -> {
            String b = body(m);
            checked.add(b);
            int n = checks.merge(b, 1, Integer::sum);
            if (n == 1) {
                return TransactionResolution.UNKNOWN;
            }
            return b.equals("tx-orphan") ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
        };
        Producer p = producer(config(endpoint), checker, topic);
        Transaction t = p.beginTransaction();
        p.send(message(topic, "tx-commit").build(), t);
        t.commit();
        t = p.beginTransaction();
        p.send(message(topic, "tx-rollback").build(), t);
        t.rollback();
        // Neither committed nor rolled back: the broker checks back, through the proxy.
        p.send(message(topic, "tx-orphan").build(), p.beginTransaction());
        p.send(message(topic, "tx-orphan-rollback").build(), p.beginTransaction());
        SimpleConsumer c = consumer(endpoint, group, topic);
        Map<String, List<MessageView>> seen = receiveUntil(c, 2, 60, 15, true);
        // Wait until the rolled-back orphan was decided too, then make sure nothing else shows up.
        double end = now() + 30;
        while (now() < end && checks.getOrDefault("tx-orphan-rollback", 0) < 2) {
            sleep(200);
        }
        sleep(1000);
        seen.putAll(receiveUntil(c, 3, 3, 15, true));
        c.close();
        p.close();
        check(new TreeSet<>(seen.keySet()).equals(new TreeSet<>(Arrays.asList("tx-commit", "tx-orphan"))),
            "received " + new TreeSet<>(seen.keySet()));
        check(checks.getOrDefault("tx-orphan", 0) >= 2, "the checker was asked about " + checked);
        check(checks.getOrDefault("tx-orphan-rollback", 0) >= 2, "the checker was asked about " + checked);
        check(!checks.containsKey("tx-commit") && !checks.containsKey("tx-rollback"),
            "the checker was asked about ended transactions: " + checked);
        print(obj("received", new TreeSet<>(seen.keySet()), "checked", checked));
    }

    /** A PushConsumer (QueryAssignment, ReceiveMessage, AckMessage) consumes every message exactly once. */
    static void push(String endpoint, String topic, String group) throws Exception {
        int n = 12;
        List<String> got = new CopyOnWriteArrayList<>();
        List<String> bad = new CopyOnWriteArrayList<>();
        Producer p = producer(endpoint, topic);
        for (int i = 0; i < n; i++) {
            p.send(message(topic, "push-" + i).setTag("TagP").build());
        }
        p.close();
        PushConsumer c = PROVIDER.newPushConsumerBuilder().setClientConfiguration(config(endpoint))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("TagP")))
            .setMessageListener(m -> {
                got.add(body(m));
                if (((MessageViewImpl) m).isCorrupted() || m.getDeliveryAttempt() != 1) {
                    bad.add(body(m) + " attempt " + m.getDeliveryAttempt());
                }
                return ConsumeResult.SUCCESS;
            })
            .build();
        double end = now() + 45;
        while (now() < end && new HashSet<>(got).size() < n) {
            sleep(200);
        }
        // Acks lost would show as second deliveries after the invisible time.
        sleep(3000);
        c.close();
        Set<String> want = new TreeSet<>();
        for (int i = 0; i < n; i++) {
            want.add("push-" + i);
        }
        check(new TreeSet<>(got).equals(want), "consumed " + new TreeSet<>(got));
        check(got.size() == n, "consumed " + got.size() + " times for " + n + " messages (acks lost?): " + got);
        check(bad.isEmpty(), "odd deliveries: " + bad);
        print(obj("consumed", got.size()));
    }

    /**
     * A PushConsumer of an orderly group (the settings answer makes the SDK consume FIFO): 3 message groups x 4;
     * the listener fails `java-0:0` every time, so the SDK retries it locally (attempt 2) and then forwards it to
     * the DLQ (ForwardMessageToDeadLetterQueue) after the group's max attempts (`attemptsArg`). Prints the
     * consumption log (body, group, attempt, in the order the listener ran) for run.py's checks.
     */
    static void fifoPush(String endpoint, String topic, String group, String attemptsArg) throws Exception {
        int attempts = Integer.parseInt(attemptsArg);
        int groups = 3;
        int perGroup = 4;
        Producer p = producer(endpoint, topic);
        for (int i = 0; i < perGroup; i++) {
            for (int g = 0; g < groups; g++) {
                p.send(message(topic, "java-" + g + ":" + i).setMessageGroup("java-" + g).build());
            }
        }
        p.close();
        List<Object> log = Collections.synchronizedList(new ArrayList<>());
        Set<String> done = ConcurrentHashMap.newKeySet();
        PushConsumer c = PROVIDER.newPushConsumerBuilder().setClientConfiguration(config(endpoint))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .setMessageListener(m -> {
                String b = body(m);
                log.add(obj("body", b, "group", m.getMessageGroup().orElse(null), "attempt", m.getDeliveryAttempt(),
                    "corrupted", ((MessageViewImpl) m).isCorrupted()));
                if (b.equals("java-0:0")) {
                    if (m.getDeliveryAttempt() >= attempts) {
                        done.add(b);
                    }
                    return ConsumeResult.FAILURE;
                }
                done.add(b);
                return ConsumeResult.SUCCESS;
            })
            .build();
        double end = now() + 60;
        while (now() < end && done.size() < groups * perGroup) {
            sleep(200);
        }
        // Anything delivered once more (a lost ack, a message redelivered by the broker) shows up meanwhile.
        sleep(3000);
        c.close();
        check(done.size() == groups * perGroup, "consumed " + new TreeSet<>(done));
        synchronized (log) {
            print(obj("log", new ArrayList<>(log)));
        }
    }

    static void redelivery(String endpoint, String topic, String group) throws Exception {
        Producer p = producer(endpoint, topic);
        p.send(message(topic, "redeliver-me").build());
        p.send(message(topic, "keep-invisible").build());
        p.close();
        SimpleConsumer c = consumer(endpoint, group, topic);
        Map<String, List<MessageView>> first = receiveUntil(c, 2, 30, 2, false);
        check(new TreeSet<>(first.keySet()).equals(new TreeSet<>(Arrays.asList("keep-invisible", "redeliver-me"))),
            "first receive: " + first.keySet());
        // Extend one message's invisible time: it must not come back with the other.
        MessageView kept = first.get("keep-invisible").get(0);
        String oldHandle = ((MessageViewImpl) kept).getReceiptHandle();
        c.changeInvisibleDuration(kept, Duration.ofSeconds(30));
        check(!oldHandle.equals(((MessageViewImpl) kept).getReceiptHandle()), "the receipt handle was not renewed");
        double t0 = now();
        Map<String, List<MessageView>> again = receiveUntil(c, 1, 30, 10, false);
        double waited = now() - t0;
        check(again.keySet().equals(Collections.singleton("redeliver-me")), "after the invisible time: "
            + again.keySet());
        MessageView m = again.get("redeliver-me").get(0);
        check(m.getDeliveryAttempt() == 2, "redelivered with delivery attempt " + m.getDeliveryAttempt());
        check(m.getMessageId().equals(first.get("redeliver-me").get(0).getMessageId()),
            "redelivered with another message id");
        c.ack(m);
        // The message whose invisible time was extended is acked with its renewed handle.
        c.ack(kept);
        Map<String, List<MessageView>> later = receiveUntil(c, 1, 5, 10, true);
        check(later.isEmpty(), "acked messages came back: " + later.keySet());
        c.close();
        print(obj("redelivered_after_s", Math.round(waited * 10) / 10.0, "attempt", m.getDeliveryAttempt()));
    }

    /** Never acked: after `attempts` deliveries (the group's retryMaxTimes + 1) it goes to %DLQ%group. */
    static void dlq(String endpoint, String topic, String group, String attemptsArg) throws Exception {
        int attempts = Integer.parseInt(attemptsArg);
        Producer p = producer(endpoint, topic);
        p.send(message(topic, "poison").build());
        p.close();
        SimpleConsumer c = consumer(endpoint, group, topic);
        List<Integer> seen = new ArrayList<>();
        double end = now() + 60;
        while (now() < end && seen.size() < attempts) {
            for (MessageView m : c.receive(32, Duration.ofSeconds(1))) {
                seen.add(m.getDeliveryAttempt());
            }
        }
        List<Integer> want = new ArrayList<>();
        for (int i = 1; i <= attempts; i++) {
            want.add(i);
        }
        check(seen.equals(want), "delivery attempts " + seen + ", want " + want);
        Map<String, List<MessageView>> more = receiveUntil(c, 1, 6, 1, false);
        check(more.isEmpty(), "delivered again after the last attempt: " + more.keySet());
        c.close();
        print(obj("attempts", seen));
    }

    /** Right credentials send (run.py checks the broker stored it); a wrong secret is refused as UNAUTHORIZED. */
    static void acl(String endpoint, String topic, String ak, String sk) throws Exception {
        Producer p = producer(config(endpoint, ak, sk), null, topic);
        SendReceipt r = p.send(message(topic, "signed").build());
        p.close();
        String refused = null;
        String kind = null;
        try {
            Producer bad = producer(config(endpoint, ak, sk + "x"), null, topic);
            bad.send(message(topic, "forged").build());
            fail("a wrong secret key could send");
        } catch (ClientException | IllegalStateException e) {
            // The route query at start-up is refused: build() fails with the SDK's UnauthorizedException as
            // a cause (IllegalStateException "... to be RUNNING, but the service has FAILED").
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof org.apache.rocketmq.client.java.exception.UnauthorizedException) {
                    kind = t.getClass().getSimpleName();
                    refused = t.getMessage();
                    // Code.UNAUTHORIZED; the SDK's message carries it as "response-code=...".
                    check(refused != null && refused.contains("response-code=40100"), "refused as " + refused);
                }
            }
            if (kind == null) {
                StringBuilder chain = new StringBuilder();
                for (Throwable t = e; t != null; t = t.getCause()) {
                    chain.append(t.getClass().getName()).append(": ").append(t.getMessage()).append(" <- ");
                }
                fail("a wrong secret key was refused, but not as UNAUTHORIZED: " + chain);
            }
        }
        print(obj("sent", r.getMessageId().toString(), "refused", kind + ": "
            + (refused == null ? "" : refused.substring(0, Math.min(200, refused.length())))));
    }

    public static void main(String[] args) {
        try {
            if (args.length < 3) {
                fail("usage: JavaSdk <scenario> <endpoint> <topic> [args]");
            }
            String[] a = args;
            switch (a[0]) {
                case "normal": normal(a[1], a[2], a[3]); break;
                case "fifo": fifo(a[1], a[2], a[3]); break;
                case "delay": delay(a[1], a[2], a[3]); break;
                case "recall": recall(a[1], a[2], a[3]); break;
                case "transaction": transaction(a[1], a[2], a[3]); break;
                case "push": push(a[1], a[2], a[3]); break;
                case "fifo_push": fifoPush(a[1], a[2], a[3], a[4]); break;
                case "redelivery": redelivery(a[1], a[2], a[3]); break;
                case "dlq": dlq(a[1], a[2], a[3], a[4]); break;
                case "acl": acl(a[1], a[2], a[3], a[4]); break;
                default: fail("no scenario " + a[0]);
            }
        } catch (Throwable t) {
            t.printStackTrace();
            fail("scenario " + args[0] + " raised " + t);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
