"""The chaos clients' side of the RocketMQ remoting protocol: one request per connection, with the
phase a failure happened in kept apart (a refused or timed-out connect never carried the request, so
the send certainly did not happen; a failure after the request went out leaves it unknown).

Sends are SEND_MESSAGE with JSON headers, as Apache's Java client sends them; reads are PULL_MESSAGE
without a subscription (the whole queue), records decoded from RocketMQ's stored format. The chaos
consumers pull the same way for their group, committing their offset with the pull (sysFlag
COMMIT_OFFSET) or UPDATE_CONSUMER_OFFSET, and read it back with QUERY_CONSUMER_OFFSET.
"""

import json
import socket
import struct

SEND_MESSAGE = 10
PULL_MESSAGE = 11
UPDATE_BROKER_CONFIG = 25
HEART_BEAT = 34
END_TRANSACTION = 37
CHECK_TRANSACTION_STATE = 39
QUERY_CONSUMER_OFFSET = 14
UPDATE_CONSUMER_OFFSET = 15
GET_ROUTEINFO_BY_TOPIC = 105
UPDATE_AND_CREATE_TOPIC = 17
CONTROLLER_GET_REPLICA_INFO = 1004

SUCCESS = 0
PULL_NOT_FOUND = 19
PULL_RETRY_IMMEDIATELY = 20
PULL_OFFSET_MOVED = 21
QUERY_NOT_FOUND = 22

PULL_FLAG_COMMIT_OFFSET = 0x1

# sysFlag / commitOrRollback transaction types (MessageSysFlag).
TRANSACTION_PREPARED = 0x4
TRANSACTION_COMMIT = 0x8
TRANSACTION_ROLLBACK = 0xC
TRANSACTION_UNKNOWN = 0x0

_MAX_FRAME = 16 * 1024 * 1024
_MAGIC_V2 = -626843477


class NotSent(Exception):
    """The request never left: the connection could not be made."""


class Unknown(Exception):
    """The request may have arrived: the connection broke or timed out after it was written."""


class Reply:
    def __init__(self, code, remark, ext, body):
        self.code = code
        self.remark = remark
        self.ext = ext
        self.body = body

    def json_body(self):
        import re
        text = self.body.decode("utf-8")
        return json.loads(re.sub(r'([{,])\s*(-?\d+)\s*:', r'\1"\2":', text))


def _recv_exact(sock, n):
    chunks = []
    while n > 0:
        chunk = sock.recv(n)
        if not chunk:
            raise Unknown("connection closed by peer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def request(addr, code, fields=None, body=b"", timeout=2.0):
    host, port = addr.rsplit(":", 1)
    header = json.dumps({
        "code": code, "language": "JAVA", "version": 453, "opaque": 7, "flag": 0,
        "extFields": {k: str(v) for k, v in (fields or {}).items()},
        "serializeTypeCurrentRPC": "JSON",
    }).encode("utf-8")
    frame = struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as err:
        raise NotSent("connect %s: %s" % (addr, err))
    try:
        sock.settimeout(timeout)
        try:
            sock.sendall(frame)
            (length,) = struct.unpack(">i", _recv_exact(sock, 4))
            if length < 4 or length > _MAX_FRAME:
                raise Unknown("bad frame length %d" % length)
            payload = _recv_exact(sock, length)
        except OSError as err:
            raise Unknown("%s: %s" % (addr, err))
    finally:
        sock.close()
    (mark,) = struct.unpack(">i", payload[:4])
    header_len = mark & 0xFFFFFF
    if (mark >> 24) & 0xFF != 0 or 4 + header_len > len(payload):
        raise Unknown("unreadable reply header from %s" % addr)
    try:
        reply = json.loads(payload[4:4 + header_len].decode("utf-8"))
    except ValueError as err:
        raise Unknown("unparsable reply header from %s: %s" % (addr, err))
    return Reply(int(reply.get("code", -1)), reply.get("remark"), reply.get("extFields") or {},
                 payload[4 + header_len:])


def properties_string(props):
    return "".join("%s\x01%s\x02" % kv for kv in props.items())


def send(addr, topic, queue_id, key, body, timeout=2.0):
    """SEND_MESSAGE of one message to queue `queue_id`; the Reply (any code). Raises NotSent / Unknown."""
    fields = {
        "producerGroup": "chaos-producer", "topic": topic, "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 0, "flag": 0,
        "properties": properties_string({"KEYS": key, "UNIQ_KEY": key, "WAIT": "true"}),
        "reconsumeTimes": 0, "unitMode": "false", "batch": "false",
    }
    return request(addr, SEND_MESSAGE, fields, body, timeout)


def decode_records(body):
    """Stored records of a pull body -> [(queue_id, queue_offset, body, properties)]."""
    out = []
    pos = 0
    while pos + 8 <= len(body):
        total, magic = struct.unpack_from(">ii", body, pos)
        if total <= 0 or pos + total > len(body):
            raise ValueError("bad record size %d at %d of %d" % (total, pos, len(body)))
        rec = body[pos:pos + total]
        queue_id, = struct.unpack_from(">i", rec, 12)
        queue_offset, = struct.unpack_from(">q", rec, 20)
        sys_flag, = struct.unpack_from(">i", rec, 36)
        at = 40 + 8 + (20 if sys_flag & 0x10 else 8) + 8 + (20 if sys_flag & 0x20 else 8) + 4 + 8
        body_len, = struct.unpack_from(">i", rec, at)
        msg_body = rec[at + 4:at + 4 + body_len]
        at += 4 + body_len
        if magic == _MAGIC_V2:
            topic_len, = struct.unpack_from(">h", rec, at)
            at += 2 + topic_len
        else:
            topic_len = rec[at]
            at += 1 + topic_len
        props_len, = struct.unpack_from(">h", rec, at)
        props = rec[at + 2:at + 2 + props_len].decode("utf-8", "replace")
        out.append((queue_id, queue_offset, msg_body,
                    dict(p.split("\x01", 1) for p in props.split("\x02") if "\x01" in p)))
        pos += total
    return out


def pull(addr, group, topic, queue_id, offset, commit_offset=None, max_nums=32, timeout=2.0):
    """One PULL_MESSAGE without long polling, committing `commit_offset` with it when given ->
    (Reply, records). Raises NotSent / Unknown, ValueError for a body that does not decode."""
    fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
              "maxMsgNums": max_nums, "sysFlag": PULL_FLAG_COMMIT_OFFSET if commit_offset is not None else 0,
              "commitOffset": commit_offset if commit_offset is not None else 0, "suspendTimeoutMillis": 0,
              "subVersion": 0, "expressionType": "TAG", "subscription": "*"}
    reply = request(addr, PULL_MESSAGE, fields, timeout=timeout)
    records = decode_records(reply.body) if reply.code == SUCCESS else []
    return reply, records


def query_offset(addr, group, topic, queue_id, timeout=2.0):
    """QUERY_CONSUMER_OFFSET -> the group's committed offset, or None when the broker has none."""
    reply = request(addr, QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id},
                    timeout=timeout)
    if reply.code == QUERY_NOT_FOUND:
        return None
    if reply.code != SUCCESS or "offset" not in reply.ext:
        raise Unknown("QUERY_CONSUMER_OFFSET at %s answered %d %r" % (addr, reply.code, reply.remark))
    return int(reply.ext["offset"])


def update_offset(addr, group, topic, queue_id, offset, timeout=2.0):
    """UPDATE_CONSUMER_OFFSET; the reply's code (the request is oneway in some clients, not here)."""
    reply = request(addr, UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                                   "commitOffset": offset}, timeout=timeout)
    return reply.code


def pull_all(addr, topic, queue_id, timeout=3.0):
    """Every record of one queue from offset 0 -> (records, min_offset, last_code)."""
    records = []
    offset = 0
    min_offset = None
    for _ in range(100000):
        fields = {"consumerGroup": "chaos-check", "topic": topic, "queueId": queue_id, "queueOffset": offset,
                  "maxMsgNums": 32, "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0,
                  "subVersion": 0, "expressionType": "TAG", "subscription": "*"}
        reply = request(addr, PULL_MESSAGE, fields, timeout=timeout)
        if min_offset is None and "minOffset" in reply.ext:
            min_offset = int(reply.ext["minOffset"])
        if reply.code == PULL_OFFSET_MOVED and offset == 0 and "nextBeginOffset" in reply.ext:
            offset = int(reply.ext["nextBeginOffset"])
            continue
        if reply.code != SUCCESS:
            return records, min_offset, reply.code
        got = decode_records(reply.body)
        if not got:
            return records, min_offset, reply.code
        records.extend(got)
        offset = int(reply.ext["nextBeginOffset"])
    return records, min_offset, -1


def master_of(namesrv_addr, topic, timeout=2.0):
    """brokerId 0's address in the topic's route at the name server, or None."""
    reply = request(namesrv_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=timeout)
    if reply.code != SUCCESS:
        return None
    for data in reply.json_body().get("brokerDatas") or []:
        addrs = {str(k): v for k, v in (data.get("brokerAddrs") or {}).items()}
        if "0" in addrs:
            return addrs["0"]
    return None


def create_topic(addr, topic, queues):
    fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
              "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
    reply = request(addr, UPDATE_AND_CREATE_TOPIC, fields, timeout=5.0)
    if reply.code != SUCCESS:
        raise Unknown("UPDATE_AND_CREATE_TOPIC at %s answered %d %r" % (addr, reply.code, reply.remark))


def replica_info(controller_addr, broker_name, timeout=1.0):
    """(masterBrokerId or None, masterAddress, masterEpoch, syncStateSet) or None."""
    reply = request(controller_addr, CONTROLLER_GET_REPLICA_INFO, {"brokerName": broker_name}, timeout=timeout)
    if reply.code != SUCCESS:
        return None
    master_id = reply.ext.get("masterBrokerId")
    sset = []
    if reply.body:
        try:
            sset = sorted(int(b) for b in (reply.json_body().get("syncStateSet") or []))
        except ValueError:
            sset = []
    return {"masterBrokerId": int(master_id) if master_id not in (None, "") else None,
            "masterAddress": reply.ext.get("masterAddress") or "",
            "masterEpoch": int(reply.ext.get("masterEpoch", 0) or 0), "syncStateSet": sset}


# ---- The message kinds beyond plain sends (features.py): sends with more properties and a sysFlag,
# END_TRANSACTION, records with their sysFlag and store time, and a kept connection that answers the
# broker's own requests (CHECK_TRANSACTION_STATE goes to the connection a producer's heartbeat came on).

def send_message(addr, topic, queue_id, key, body, props=None, sys_flag=0, group="chaos-producer", timeout=2.0):
    """SEND_MESSAGE with `props` added to KEYS / UNIQ_KEY / WAIT and the given sysFlag; the Reply."""
    all_props = {"KEYS": key, "UNIQ_KEY": key, "WAIT": "true"}
    all_props.update(props or {})
    fields = {
        "producerGroup": group, "topic": topic, "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": sys_flag, "bornTimestamp": 0, "flag": 0,
        "properties": properties_string(all_props),
        "reconsumeTimes": 0, "unitMode": "false", "batch": "false",
    }
    return request(addr, SEND_MESSAGE, fields, body, timeout)


def commit_log_offset(offset_msg_id):
    """The CommitLog offset in a send reply's msgId (an offsetMsgId: host, port, offset in hex), or None."""
    text = offset_msg_id or ""
    if len(text) not in (32, 56):
        return None
    try:
        return int(text[-16:], 16)
    except ValueError:
        return None


def end_transaction(addr, group, key, commit_log_offset_, queue_offset, outcome, from_check=False, timeout=2.0):
    """END_TRANSACTION as a request (Java sends it oneway; the reply tells whether it was applied)."""
    fields = {"producerGroup": group, "tranStateTableOffset": queue_offset, "commitLogOffset": commit_log_offset_,
              "commitOrRollback": outcome, "fromTransactionCheck": "true" if from_check else "false",
              "msgId": key, "transactionId": key}
    return request(addr, END_TRANSACTION, fields, timeout=timeout)


def decode_records_full(body):
    """Stored records of a pull body -> [dict(queue, offset, body, props, sys_flag, store_ms)]."""
    out = []
    pos = 0
    while pos + 8 <= len(body):
        total, magic = struct.unpack_from(">ii", body, pos)
        if total <= 0 or pos + total > len(body):
            raise ValueError("bad record size %d at %d of %d" % (total, pos, len(body)))
        rec = body[pos:pos + total]
        try:
            queue_id, = struct.unpack_from(">i", rec, 12)
            queue_offset, = struct.unpack_from(">q", rec, 20)
            sys_flag, = struct.unpack_from(">i", rec, 36)
            at = 40 + 8 + (20 if sys_flag & 0x10 else 8)
            store_ms, = struct.unpack_from(">q", rec, at)
            at += 8 + (20 if sys_flag & 0x20 else 8) + 4 + 8
            body_len, = struct.unpack_from(">i", rec, at)
            msg_body = rec[at + 4:at + 4 + body_len]
            at += 4 + body_len
            if magic == _MAGIC_V2:
                topic_len, = struct.unpack_from(">h", rec, at)
                at += 2 + topic_len
            else:
                topic_len = rec[at]
                at += 1 + topic_len
            props_len, = struct.unpack_from(">h", rec, at)
        except (struct.error, IndexError) as err:
            raise ValueError("truncated record at %d: %s" % (pos, err))
        props = rec[at + 2:at + 2 + props_len].decode("utf-8", "replace")
        out.append({"queue": queue_id, "offset": queue_offset, "body": msg_body, "sys_flag": sys_flag,
                    "store_ms": store_ms,
                    "props": dict(p.split("\x01", 1) for p in props.split("\x02") if "\x01" in p)})
        pos += total
    return out


def pull_full(addr, group, topic, queue_id, offset, commit_offset=None, max_nums=32, timeout=2.0):
    """`pull` with records as decode_records_full gives them -> (Reply, records)."""
    fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
              "maxMsgNums": max_nums, "sysFlag": PULL_FLAG_COMMIT_OFFSET if commit_offset is not None else 0,
              "commitOffset": commit_offset if commit_offset is not None else 0, "suspendTimeoutMillis": 0,
              "subVersion": 0, "expressionType": "TAG", "subscription": "*"}
    reply = request(addr, PULL_MESSAGE, fields, timeout=timeout)
    records = decode_records_full(reply.body) if reply.code == SUCCESS else []
    return reply, records


def decode_frame(payload):
    """A frame's payload (after the length) -> (code, flag, opaque, remark, ext, body); JSON or
    ROCKETMQ (binary) headers. Raises ValueError for one that does not decode."""
    if len(payload) < 4:
        raise ValueError("short frame")
    (mark,) = struct.unpack(">i", payload[:4])
    kind = (mark >> 24) & 0xFF
    header_len = mark & 0xFFFFFF
    if 4 + header_len > len(payload):
        raise ValueError("header longer than the frame")
    head = payload[4:4 + header_len]
    body = payload[4 + header_len:]
    if kind == 0:
        h = json.loads(head.decode("utf-8"))
        return (int(h.get("code", -1)), int(h.get("flag", 0)), int(h.get("opaque", 0)), h.get("remark"),
                {str(k): str(v) for k, v in (h.get("extFields") or {}).items()}, body)
    if kind != 1:
        raise ValueError("unknown header serialization %d" % kind)
    try:
        code, _lang, _version, opaque, flag = struct.unpack_from(">hBhii", head, 0)
        at = 13
        (remark_len,) = struct.unpack_from(">i", head, at)
        at += 4
        remark = head[at:at + remark_len].decode("utf-8", "replace") if remark_len > 0 else None
        at += max(remark_len, 0)
        (ext_len,) = struct.unpack_from(">i", head, at)
        at += 4
        ext = {}
        end = at + max(ext_len, 0)
        while at < end:
            (klen,) = struct.unpack_from(">h", head, at)
            k = head[at + 2:at + 2 + klen].decode("utf-8", "replace")
            at += 2 + klen
            (vlen,) = struct.unpack_from(">i", head, at)
            ext[k] = head[at + 4:at + 4 + vlen].decode("utf-8", "replace")
            at += 4 + vlen
    except struct.error as err:
        raise ValueError("truncated ROCKETMQ header: %s" % err)
    return code, flag, opaque, remark, ext, body


class Connection:
    """One kept connection to a broker: requests matched to replies by opaque, and the broker's own
    requests (flag without the response bit) handed to `on_request(code, ext, body)` on the reader
    thread. `closed` is set once the connection broke; make a new one then."""

    def __init__(self, addr, on_request=None, timeout=2.0):
        import threading
        host, port = addr.rsplit(":", 1)
        try:
            self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        except OSError as err:
            raise NotSent("connect %s: %s" % (addr, err))
        self.sock.settimeout(None)
        self.addr = addr
        self.on_request = on_request
        self.lock = threading.Lock()
        self.waiting = {}
        self.opaque = 100
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        try:
            while True:
                (length,) = struct.unpack(">i", _recv_exact(self.sock, 4))
                if length < 4 or length > _MAX_FRAME:
                    break
                code, flag, opaque, remark, ext, body = decode_frame(_recv_exact(self.sock, length))
                if flag & 1:
                    with self.lock:
                        slot = self.waiting.pop(opaque, None)
                    if slot is not None:
                        slot[1].append(Reply(code, remark, ext, body))
                        slot[0].set()
                elif self.on_request is not None:
                    try:
                        self.on_request(code, ext, body)
                    except Exception:  # noqa: BLE001 (a handler's bug must not end the reader)
                        pass
        except (OSError, Unknown, ValueError, struct.error):
            pass
        finally:
            self.closed.set()
            with self.lock:
                for ev, _ in self.waiting.values():
                    ev.set()
                self.waiting.clear()

    def call(self, code, fields=None, body=b"", timeout=2.0):
        """A request on this connection -> Reply. Raises Unknown when no reply came."""
        import threading
        if self.closed.is_set():
            raise NotSent("connection to %s is closed" % self.addr)
        with self.lock:
            self.opaque += 1
            opaque = self.opaque
            slot = (threading.Event(), [])
            self.waiting[opaque] = slot
        header = json.dumps({
            "code": code, "language": "JAVA", "version": 453, "opaque": opaque, "flag": 0,
            "extFields": {k: str(v) for k, v in (fields or {}).items()},
            "serializeTypeCurrentRPC": "JSON",
        }).encode("utf-8")
        try:
            self.sock.sendall(struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body)
        except OSError as err:
            self.close()
            raise Unknown("%s: %s" % (self.addr, err))
        slot[0].wait(timeout)
        with self.lock:
            self.waiting.pop(opaque, None)
        if not slot[1]:
            raise Unknown("no reply from %s" % self.addr)
        return slot[1][0]

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.closed.set()


def heartbeat(conn, client_id, producer_group, timeout=2.0):
    """HEART_BEAT of one producer group on a kept connection (so the broker checks transactions back
    on it) -> the reply's code."""
    body = json.dumps({"clientID": client_id, "producerDataSet": [{"groupName": producer_group}],
                       "consumerDataSet": []}).encode("utf-8")
    return conn.call(HEART_BEAT, {}, body, timeout=timeout).code
