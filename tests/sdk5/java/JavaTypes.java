/*
 * Message types against topic types (RocketMQ 5's `message.type` topic attribute) with the Java gRPC SDK,
 * through our proxy. Uses JavaSdk's plumbing. Run by tests/sdk5/run.py:
 *
 *     JavaTypes <endpoint> <topic prefix> <mqadmin> <name server>
 *
 * Topics <prefix>Normal, Fifo, Delay, Tx (those types), Mixed and Flip (MIXED) exist beforehand.
 * Part "sdk": a message of each type to each topic; the outcomes show what the routes told the SDK.
 * Part "proxy": <prefix>Flip is turned NORMAL, then FIFO, with our mqadmin while the SDK's route still says
 * MIXED, so the SDK sends every type and the proxy decides. Prints one JSON line of outcomes: "ok" or the
 * exception; run.py judges them.
 */

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

public final class JavaTypes {
    static final List<String> KINDS = Arrays.asList("NORMAL", "FIFO", "DELAY", "TRANSACTION");

    /** Sends one message of `kind` to `topic`: "ok", or the exception with its causes. */
    static String send(Producer p, String topic, String kind) {
        try {
            JavaSdkMessage m = new JavaSdkMessage(topic, kind);
            if (kind.equals("TRANSACTION")) {
                Transaction t = p.beginTransaction();
                p.send(m.build(), t);
                t.commit();
            } else {
                p.send(m.build());
            }
            return "ok";
        } catch (Throwable e) {
            StringBuilder chain = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause()) {
                chain.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append(" <- ");
            }
            return chain.toString();
        }
    }

    /** A message of one kind: a message group makes it FIFO, a delivery time DELAY. */
    static final class JavaSdkMessage {
        final String topic;
        final String kind;

        JavaSdkMessage(String topic, String kind) {
            this.topic = topic;
            this.kind = kind;
        }

        Message build() {
            org.apache.rocketmq.client.apis.message.MessageBuilder b = JavaSdk.message(topic, kind + "-" + topic);
            if (kind.equals("FIFO")) {
                b.setMessageGroup("g");
            } else if (kind.equals("DELAY")) {
                b.setDeliveryTimestamp(System.currentTimeMillis() + 1000);
            }
            return b.build();
        }
    }

    static void mqadmin(String exe, String namesrv, String topic, String type) throws Exception {
        Process proc = new ProcessBuilder(exe, "updateTopic", "-n", namesrv, "-c", "DefaultCluster", "-t", topic,
            "-r", "4", "-w", "4", "-a", "+message.type=" + type).redirectErrorStream(true).start();
        String out = new String(proc.getInputStream().readAllBytes());
        JavaSdk.check(proc.waitFor() == 0, "mqadmin updateTopic failed: " + out);
    }

    public static void main(String[] args) {
        try {
            JavaSdk.check(args.length == 4, "usage: JavaTypes <endpoint> <prefix> <mqadmin> <namesrv>");
            String endpoint = args[0];
            String prefix = args[1];
            List<String> topics = new ArrayList<>();
            for (String t : Arrays.asList("Normal", "Fifo", "Delay", "Tx", "Mixed", "Flip")) {
                topics.add(prefix + t);
            }
            Producer p = JavaSdk.producer(JavaSdk.config(endpoint), m -> TransactionResolution.COMMIT,
                topics.toArray(new String[0]));
            Map<String, Object> sdk = new LinkedHashMap<>();
            for (String topic : topics.subList(0, 5)) {
                Map<String, Object> row = new LinkedHashMap<>();
                for (String kind : KINDS) {
                    row.put(kind, send(p, topic, kind));
                }
                sdk.put(topic, row);
            }
            Map<String, Object> proxy = new LinkedHashMap<>();
            String flip = prefix + "Flip";
            for (String type : Arrays.asList("NORMAL", "FIFO")) {
                mqadmin(args[2], args[3], flip, type);
                // The proxy asks a topic's type again once it is older than its refresh time (1 s here).
                JavaSdk.sleep(2500);
                Map<String, Object> row = new LinkedHashMap<>();
                for (String kind : KINDS) {
                    row.put(kind, send(p, flip, kind));
                }
                proxy.put(type, row);
            }
            p.close();
            JavaSdk.print(JavaSdk.obj("sdk", sdk, "proxy", proxy));
        } catch (Throwable t) {
            t.printStackTrace();
            JavaSdk.fail("JavaTypes raised " + t);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
