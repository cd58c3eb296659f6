// Message queries through a broker with ACL on, with Apache RocketMQ's Java client (4.9.8, and 5.5.0 where
// cases_java.py says) signing every request (AclClientRPCHook), driven by tests/interop/cases_java.py.
// Prints one JSON object per line.
//
//   AclQuery NAMESRV TOPIC ACCESS_KEY SECRET_KEY WRONG_SECRET COUNT
//
// With the right keys: sends COUNT messages (key "aclq-key-I", body "aclq-I"), then for each one
// queryMessage(topic, key) (QUERY_MESSAGE by key), viewMessage(topic, msgId) (QUERY_MESSAGE with
// _UNIQUE_KEY_QUERY, which 4.9.4+ clients sign), viewMessage(offsetMsgId) (VIEW_MESSAGE_BY_ID), and the
// unique-key QUERY_MESSAGE as MQClientAPIImpl builds it, sent with invokeSync to the broker the message was
// sent to (its address from the topic route) so the broker's answer code and remark are seen. Then the same
// for message 0 with WRONG_SECRET: each must be refused.
import com.alibaba.fastjson.JSON;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

public class AclQuery {
    /**
     * VIEW_MESSAGE_BY_ID of an offset msgId: 4.9.8's viewMessage(offsetMsgId); 5.x has only
     * viewMessage(topic, msgId), which decodes an offset msgId the same way first.
     */
    static MessageExt viewByOffsetMsgId(DefaultMQProducer p, String topic, String offsetMsgId) throws Exception {
        try {
            return (MessageExt) DefaultMQProducer.class.getMethod("viewMessage", String.class).invoke(p, offsetMsgId);
        } catch (NoSuchMethodException e) {
            return p.viewMessage(topic, offsetMsgId);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    /** RequestCode.QUERY_MESSAGE. */
    private static final int QUERY_MESSAGE = 12;
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    /** The exception as the case sees it: class, the broker's response code where the client has it, text. */
    static Object[] failure(Exception e) {
        int code = -1;
        if (e instanceof MQBrokerException) {
            code = ((MQBrokerException) e).getResponseCode();
        } else if (e instanceof MQClientException) {
            code = ((MQClientException) e).getResponseCode();
        }
        String text = e instanceof MQBrokerException ? ((MQBrokerException) e).getErrorMessage()
            : e instanceof MQClientException ? ((MQClientException) e).getErrorMessage() : e.toString();
        return new Object[] {"error", e.getClass().getSimpleName(), "code", code, "message", String.valueOf(text)};
    }

    static Object[] concat(Object[] a, Object[] b) {
        Object[] out = new Object[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static DefaultMQProducer producer(String namesrv, String group, String ak, String sk) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group, new AclClientRPCHook(new SessionCredentials(ak, sk)));
        p.setNamesrvAddr(namesrv);
        // One client instance (and so one RPC hook) per producer: instances are shared by name in a JVM.
        p.setInstanceName(group);
        p.start();
        return p;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        String ak = args[2];
        String sk = args[3];
        String wrongSk = args[4];
        int count = Integer.parseInt(args[5]);
        try {
            run(namesrv, topic, ak, sk, wrongSk, count);
        } catch (Exception e) {
            emit("kind", "error", "error", e.toString());
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String namesrv, String topic, String ak, String sk, String wrongSk, int count)
        throws Exception {
        DefaultMQProducer right = producer(namesrv, "aclq_right", ak, sk);
        List<SendResult> sent = new ArrayList<>();
        long begin = System.currentTimeMillis() - 60000;
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagQ", "aclq-key-" + i, ("aclq-" + i).getBytes(StandardCharsets.UTF_8));
            SendResult r = right.send(msg);
            sent.add(r);
            emit("kind", "sent", "i", i, "status", r.getSendStatus().name(), "msg_id", r.getMsgId(),
                "offset_msg_id", r.getOffsetMsgId(), "queue_id", r.getMessageQueue().getQueueId(),
                "broker", r.getMessageQueue().getBrokerName());
        }
        for (int i = 0; i < count; i++) {
            queries(right, topic, "right", i, sent.get(i), begin, true);
        }
        right.shutdown();

        DefaultMQProducer wrong = producer(namesrv, "aclq_wrong", ak, wrongSk);
        queries(wrong, topic, "wrong", 0, sent.get(0), begin, false);
        wrong.shutdown();
    }

    static void queries(DefaultMQProducer p, String topic, String keys, int i, SendResult sent,
        long begin, boolean retry) throws Exception {
        // The key index may trail the send a little: the right keys try for up to 10 s.
        long until = System.currentTimeMillis() + (retry ? 10000 : 0);
        while (true) {
            try {
                QueryResult qr = p.queryMessage(topic, "aclq-key-" + i, 32, begin, System.currentTimeMillis() + 60000);
                List<String> bodies = new ArrayList<>();
                for (MessageExt m : qr.getMessageList()) {
                    bodies.add(body(m));
                }
                emit("kind", "query_key", "keys", keys, "i", i, "bodies", bodies);
                break;
            } catch (MQClientException e) {
                if (System.currentTimeMillis() >= until) {
                    emit(concat(new Object[] {"kind", "query_key", "keys", keys, "i", i}, failure(e)));
                    break;
                }
                Thread.sleep(300);
            }
        }
        try {
            MessageExt m = p.viewMessage(topic, sent.getMsgId());
            emit("kind", "view_unique", "keys", keys, "i", i, "body", body(m), "msg_id", m.getMsgId());
        } catch (Exception e) {
            emit(concat(new Object[] {"kind", "view_unique", "keys", keys, "i", i}, failure(e)));
        }
        try {
            MessageExt m = viewByOffsetMsgId(p, topic, sent.getOffsetMsgId());
            emit("kind", "view_offset", "keys", keys, "i", i, "body", body(m), "msg_id", m.getMsgId());
        } catch (Exception e) {
            emit(concat(new Object[] {"kind", "view_offset", "keys", keys, "i", i}, failure(e)));
        }
        // MQClientAPIImpl.queryMessage's request for a unique key, through the same client's remoting (so
        // the same hook signs it), synchronously: the broker's answer as it is. Its fields are set one by one
        // (what QueryMessageRequestHeader carries): that class and RequestCode moved packages in 5.x, and
        // this program is compiled against 4.9.8 and 5.5.0.
        RemotingCommand request = RemotingCommand.createRequestCommand(QUERY_MESSAGE, null);
        request.addExtField("topic", topic);
        request.addExtField("key", sent.getMsgId());
        request.addExtField("maxNum", "32");
        request.addExtField("beginTimestamp", Long.toString(begin));
        request.addExtField("endTimestamp", Long.toString(Long.MAX_VALUE));
        request.addExtField("_UNIQUE_KEY_QUERY", "true");
        MQClientInstance factory = p.getDefaultMQProducerImpl().getmQClientFactory();
        String broker = factory.findBrokerAddressInPublish(sent.getMessageQueue().getBrokerName());
        if (broker == null) {
            factory.updateTopicRouteInfoFromNameServer(topic);
            broker = factory.findBrokerAddressInPublish(sent.getMessageQueue().getBrokerName());
        }
        RemotingCommand response = factory.getMQClientAPIImpl().getRemotingClient().invokeSync(broker, request, 10000);
        List<String> bodies = new ArrayList<>();
        if (response.getCode() == 0 && response.getBody() != null) {
            for (MessageExt m : MessageDecoder.decodes(ByteBuffer.wrap(response.getBody()))) {
                bodies.add(body(m));
            }
        }
        emit("kind", "raw_unique_query", "keys", keys, "i", i, "broker_addr", broker, "code", response.getCode(),
            "remark", response.getRemark(), "bodies", bodies);
    }
}
