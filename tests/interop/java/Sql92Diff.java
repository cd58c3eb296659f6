// Differential check of SQL92 filters: Apache RocketMQ 5.5.0's own parser and evaluator (its filter module,
// from Maven Central; none is served for 4.9.8) against the broker under test. Driven by
// tests/interop/cases_java.py.
//
//   Sql92Diff NAMESRV TOPIC GROUP CASES_JSON
//
// CASES_JSON is a file: {"props": [{"a": "1", ...}, ...], "exprs": ["a > 1", ...]}. Every property map is sent
// as one message to queue 0 of TOPIC (user property "seq" = its index). Then, for each expression,
// prints {"kind": "diff", "sql": ..., "apache": ..., "ours": ...}: each side either the sorted list of
// seqs that match or "error". Apache's side is what its broker does with a message
// (ExpressionMessageFilter.isMatchedByCommitLog: only a Boolean TRUE matches, an exception does not);
// ours is what DefaultMQPullConsumer.pull with MessageSelector.bySql gets from the broker.
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.expression.Expression;
import org.apache.rocketmq.filter.parser.SelectorParser;

@SuppressWarnings("deprecation") // DefaultMQPullConsumer: the remoting client's pull by selector
public class Sql92Diff {
    static void emit(Map<String, Object> m) {
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    static Object apache(String sql, List<Map<String, String>> stored) {
        Expression expr;
        try {
            expr = SelectorParser.parse(sql);
        } catch (Throwable e) {
            return "error";
        }
        List<Integer> matched = new ArrayList<>();
        for (int i = 0; i < stored.size(); i++) {
            final Map<String, String> props = stored.get(i);
            EvaluationContext ctx = new EvaluationContext() {
                public Object get(String name) {
                    return props.get(name);
                }

                public Map<String, Object> keyValues() {
                    return new LinkedHashMap<String, Object>(props);
                }
            };
            Object ret = null;
            try {
                ret = expr.evaluate(ctx);
            } catch (Throwable e) {
                ret = null;
            }
            if (ret instanceof Boolean && (Boolean) ret) {
                matched.add(i);
            }
        }
        return matched;
    }

    static Object ours(DefaultMQPullConsumer consumer, MessageQueue mq, String sql, int count)
        throws Exception {
        TreeSet<Integer> matched = new TreeSet<>();
        long offset = 0;
        for (int round = 0; offset < count && round < 100; round++) {
            PullResult r;
            try {
                r = consumer.pull(mq, MessageSelector.bySql(sql), offset, 32, 5000);
            } catch (MQBrokerException e) {
                return "error";
            } catch (MQClientException e) {
                // The client refused before asking the broker: shown, never equal to Apache's answer.
                return "client refused: " + e.getErrorMessage();
            }
            if (r.getPullStatus() == PullStatus.FOUND) {
                for (MessageExt m : r.getMsgFoundList()) {
                    matched.add(Integer.parseInt(m.getUserProperty("seq")));
                }
            }
            if (r.getNextBeginOffset() <= offset) {
                break;
            }
            offset = r.getNextBeginOffset();
        }
        return new ArrayList<>(matched);
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String group = args[2];
        JSONObject cases = JSON.parseObject(new String(Files.readAllBytes(Paths.get(args[3])), StandardCharsets.UTF_8));
        JSONArray props = cases.getJSONArray("props");
        JSONArray exprs = cases.getJSONArray("exprs");

        DefaultMQProducer producer = new DefaultMQProducer("sql92_diff_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        MessageQueue mq = null;
        List<Map<String, String>> stored = new ArrayList<>();
        try {
            for (int i = 0; i < props.size(); i++) {
                Message msg = new Message(topic, ("diff-" + i).getBytes(StandardCharsets.UTF_8));
                JSONObject p = props.getJSONObject(i);
                for (String k : p.keySet()) {
                    msg.putUserProperty(k, p.getString(k));
                }
                msg.putUserProperty("seq", Integer.toString(i));
                if (mq == null) {
                    mq = producer.fetchPublishMessageQueues(topic).get(0);
                    mq = new MessageQueue(topic, mq.getBrokerName(), 0);
                }
                SendResult r = producer.send(msg, mq);
                // What the broker stores: the user properties and those the client added (UNIQ_KEY...).
                stored.add(new LinkedHashMap<>(msg.getProperties()));
                Map<String, Object> sent = new LinkedHashMap<>();
                sent.put("kind", "sent");
                sent.put("i", i);
                sent.put("status", r.getSendStatus().name());
                sent.put("queue_offset", r.getQueueOffset());
                emit(sent);
            }
        } finally {
            producer.shutdown();
        }

        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.start();
        // The client refuses a SQL92 pull to a broker whose version it has not learnt from a
        // heartbeat answer yet; a pull consumer sends its first heartbeat only after a while.
        MQClientInstance client = consumer.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory();
        client.updateTopicRouteInfoFromNameServer(topic);
        client.sendHeartbeatToAllBrokerWithLock();
        try {
            for (int i = 0; i < exprs.size(); i++) {
                String sql = exprs.getString(i);
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("kind", "diff");
                out.put("sql", sql);
                out.put("apache", apache(sql, stored));
                out.put("ours", ours(consumer, mq, sql, stored.size()));
                emit(out);
            }
        } finally {
            consumer.shutdown();
        }
        System.exit(0);
    }
}
