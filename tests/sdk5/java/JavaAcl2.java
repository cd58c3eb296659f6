/*
 * ACL 2.0 through the proxy with the Java SDK (rocketmq-client-java 5.2.0), against users and ACLs that run.py
 * made on the broker (AUTH_CREATE_USER / AUTH_CREATE_ACL through our mqadmin):
 *
 *     JavaAcl2 <proxy endpoint> <topic> <group> <other group>
 *     JavaAcl2 refresh <proxy endpoint> <topic>
 *
 * alice/alicepw may publish and subscribe <topic> and consume as <group>: she sends and receives. Refused, each
 * with the SDK's UnauthorizedException (Code.UNAUTHORIZED, 40100): no credentials, alice's wrong password,
 * bob (a Deny policy on <topic>), carol (disabled), dave (no such user); alice's consumer of <other group> (no
 * policy) cannot start (its settings are refused: the SDK reports a failed start).
 * Prints one JSON line: {"sent", "received", "refused": {case: the SDK's message}}; run.py checks the texts.
 */

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

public final class JavaAcl2 {
    private JavaAcl2() {
    }

    static SimpleConsumer consumer(ClientConfiguration cfg, String group, String topic) throws Exception {
        return org.apache.rocketmq.client.apis.ClientServiceProvider.loadService().newSimpleConsumerBuilder()
            .setClientConfiguration(cfg)
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic,
                new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(2))
            .build();
    }

    /** Runs `action`, which must fail with the SDK's UnauthorizedException carrying 40100: its message. */
    static String refused(String what, Callable<Object> action) {
        try {
            action.call();
        } catch (Throwable e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof org.apache.rocketmq.client.java.exception.UnauthorizedException) {
                    String msg = String.valueOf(t.getMessage());
                    JavaSdk.check(msg.contains("response-code=40100"), what + ": refused as " + msg);
                    return msg;
                }
            }
            StringBuilder chain = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause()) {
                chain.append(t.getClass().getName()).append(": ").append(t.getMessage()).append(" <- ");
            }
            JavaSdk.fail(what + ": refused, but not as UNAUTHORIZED: " + chain);
        }
        JavaSdk.fail(what + ": was not refused");
        return null;
    }

    /** A producer of `topic` with these credentials, sending one message: must be refused. */
    static String sendRefused(String what, String endpoint, String topic, String ak, String sk) {
        return refused(what, () -> {
            Producer p = JavaSdk.producer(JavaSdk.config(endpoint, ak, sk), null, topic);
            try {
                return p.send(JavaSdk.message(topic, "forged by " + what).build());
            } finally {
                p.close();
            }
        });
    }

    static void run(String endpoint, String topic, String group, String otherGroup) throws Exception {
        ClientConfiguration alice = JavaSdk.config(endpoint, "alice", "alicepw");
        int n = 5;
        Producer p = JavaSdk.producer(alice, null, topic);
        for (int i = 0; i < n; i++) {
            p.send(JavaSdk.message(topic, "acl2-" + i).build());
        }
        p.close();
        SimpleConsumer c = consumer(alice, group, topic);
        Map<String, List<MessageView>> seen = JavaSdk.receiveUntil(c, n, 40, 15, true);
        c.close();
        JavaSdk.check(seen.size() == n, "alice received " + seen.size() + " of " + n + ": " + seen.keySet());

        Map<String, Object> why = new LinkedHashMap<>();
        why.put("no_credentials", sendRefused("no credentials", endpoint, topic, null, null));
        why.put("wrong_password", sendRefused("a wrong password", endpoint, topic, "alice", "alicepw-wrong"));
        why.put("deny_policy", sendRefused("a Deny policy", endpoint, topic, "bob", "bobpw"));
        why.put("disabled_user", sendRefused("a disabled user", endpoint, topic, "carol", "carolpw"));
        why.put("unknown_user", sendRefused("an unknown user", endpoint, topic, "dave", "davepw"));
        // The consumer's settings (telemetry) are refused with a status, which the SDK's start-up reports as a
        // failed start, not as UnauthorizedException: any failure here, run.py reads the proxy's reason.
        String otherFailed = null;
        try {
            SimpleConsumer other = consumer(alice, otherGroup, topic);
            other.receive(1, Duration.ofSeconds(15));
            other.close();
        } catch (Throwable e) {
            otherFailed = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        JavaSdk.check(otherFailed != null, "alice could consume as " + otherGroup);
        why.put("other_group", otherFailed);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", n);
        out.put("received", seen.size());
        out.put("refused", why);
        JavaSdk.print(out);
    }

    /**
     * carol, enabled and given Pub on `topic` after the proxy cached her as disabled: her sends are refused until
     * the proxy's cache refreshes (a user older than userCacheRefreshSeconds is asked again), then pass.
     */
    static void refresh(String endpoint, String topic) throws Exception {
        int attempts = 0;
        String last = null;
        while (attempts < 20) {
            attempts++;
            try {
                Producer p = JavaSdk.producer(JavaSdk.config(endpoint, "carol", "carolpw"), null, topic);
                p.send(JavaSdk.message(topic, "carol enabled").build());
                p.close();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("attempts", attempts);
                out.put("last_refusal", last);
                JavaSdk.print(out);
                return;
            } catch (Throwable e) {
                last = e.getClass().getSimpleName() + ": " + e.getMessage();
                Thread.sleep(500);
            }
        }
        JavaSdk.fail("carol still refused after " + attempts + " attempts: " + last);
    }

    public static void main(String[] args) {
        try {
            if (args.length == 3 && args[0].equals("refresh")) {
                refresh(args[1], args[2]);
                System.out.flush();
                Runtime.getRuntime().halt(0);
            }
            if (args.length < 4) {
                JavaSdk.fail("usage: JavaAcl2 <endpoint> <topic> <group> <other group> | refresh <endpoint> <topic>");
            }
            run(args[0], args[1], args[2], args[3]);
        } catch (Throwable t) {
            t.printStackTrace();
            JavaSdk.fail("JavaAcl2 raised " + t);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
