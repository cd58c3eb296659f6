"""A tiny RocketMQ remoting client (JSON headers) the runner uses for readiness checks and topic creation.

It sends what the Java client sends (string extFields, `serializeTypeCurrentRPC`, language JAVA), so it works
against strict brokers too. It is test scaffolding, not one of the clients under test.
"""

import json
import re
import socket
import ssl
import struct

# Request codes (Apache RocketMQ RequestCode).
UPDATE_AND_CREATE_TOPIC = 17
GET_MAX_OFFSET = 30
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
# A controller's (controller mode): who is master of a broker group, and its SyncStateSet.
CONTROLLER_GET_REPLICA_INFO = 1004

SUCCESS = 0
TOPIC_NOT_EXIST = 17

# Frames over this are refused on the wire, so a larger length means we are out of sync.
_MAX_FRAME = 16 * 1024 * 1024


# Speak TLS (trusting any certificate, as Apache's clients do in test mode) instead of plaintext: set by
# the TLS cases (`cases_tls.py`) while their servers refuse plaintext.
USE_TLS = False


def _connect(host, port, timeout):
    sock = socket.create_connection((host, port), timeout=timeout)
    if not USE_TLS:
        return sock
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context.wrap_socket(sock)


class RemotingError(Exception):
    """The peer closed, sent something unreadable, or answered with a non-success code."""


class Response:
    def __init__(self, code, remark, ext_fields, body):
        self.code = code
        self.remark = remark
        self.ext_fields = ext_fields
        self.body = body

    def json_body(self):
        """The body parsed as JSON; Java's fastjson writes integer map keys unquoted (`{0:"addr"}`)."""
        text = self.body.decode("utf-8")
        quoted = re.sub(r'([{,])\s*(-?\d+)\s*:', r'\1"\2":', text)
        return json.loads(quoted)


def _recv_exact(sock, n):
    chunks = []
    while n > 0:
        chunk = sock.recv(n)
        if not chunk:
            raise RemotingError("connection closed by peer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def request(addr, code, ext_fields=None, body=b"", timeout=5.0, opaque=1):
    """Send one request to `addr` ("host:port") and return its Response."""
    host, port = addr.rsplit(":", 1)
    header = {
        "code": code,
        "language": "JAVA",
        "version": 453,
        "opaque": opaque,
        "flag": 0,
        "extFields": {k: str(v) for k, v in (ext_fields or {}).items()},
        "serializeTypeCurrentRPC": "JSON",
    }
    header_bytes = json.dumps(header).encode("utf-8")
    frame = struct.pack(">ii", 4 + len(header_bytes) + len(body), len(header_bytes)) + header_bytes + body
    with _connect(host, int(port), timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(frame)
        (length,) = struct.unpack(">i", _recv_exact(sock, 4))
        if length < 4 or length > _MAX_FRAME:
            raise RemotingError("bad frame length %d" % length)
        payload = _recv_exact(sock, length)
    (mark,) = struct.unpack(">i", payload[:4])
    serialize_type = (mark >> 24) & 0xFF
    header_len = mark & 0xFFFFFF
    if serialize_type != 0:
        raise RemotingError("reply in serialize type %d to a JSON request" % serialize_type)
    if 4 + header_len > len(payload):
        raise RemotingError("header length %d past frame end" % header_len)
    try:
        reply = json.loads(payload[4:4 + header_len].decode("utf-8"))
    except ValueError as err:
        raise RemotingError("unparsable reply header: %s" % err)
    if reply.get("opaque") != opaque:
        raise RemotingError("reply opaque %r != %r" % (reply.get("opaque"), opaque))
    return Response(
        int(reply.get("code", -1)),
        reply.get("remark"),
        reply.get("extFields") or {},
        payload[4 + header_len:],
    )


def cluster_brokers(namesrv_addr):
    """{brokerName: {brokerId: addr}} from GET_BROKER_CLUSTER_INFO."""
    resp = request(namesrv_addr, GET_BROKER_CLUSTER_INFO)
    if resp.code != SUCCESS:
        raise RemotingError("GET_BROKER_CLUSTER_INFO answered %d %r" % (resp.code, resp.remark))
    table = resp.json_body().get("brokerAddrTable") or {}
    return {name: {str(k): v for k, v in (data.get("brokerAddrs") or {}).items()} for name, data in table.items()}


def topic_route(namesrv_addr, topic):
    """The route data of `topic`, or None when the name server answers TOPIC_NOT_EXIST."""
    resp = request(namesrv_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if resp.code == TOPIC_NOT_EXIST:
        return None
    if resp.code != SUCCESS:
        raise RemotingError("GET_ROUTEINFO_BY_TOPIC answered %d %r" % (resp.code, resp.remark))
    return resp.json_body()


def create_topic(broker_addr, topic, queue_nums=4, attributes=None):
    """UPDATE_AND_CREATE_TOPIC on the broker, as `mqadmin updateTopic` sends it; `attributes` is RocketMQ 5's
    modification string (`+cleanup.policy=COMPACTION`)."""
    fields = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": queue_nums,
        "writeQueueNums": queue_nums,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": "false",
    }
    if attributes:
        fields["attributes"] = attributes
    resp = request(broker_addr, UPDATE_AND_CREATE_TOPIC, fields)
    if resp.code != SUCCESS:
        raise RemotingError("UPDATE_AND_CREATE_TOPIC answered %d %r" % (resp.code, resp.remark))


def replica_info(controller_addr, broker_name):
    """What the controller says of broker group `broker_name`: {"masterBrokerId": int or None, "masterAddress":
    str, "masterEpoch": int, "syncStateSet": [brokerId...]}; None when it answers with an error (not the
    raft leader, an unknown group)."""
    resp = request(controller_addr, CONTROLLER_GET_REPLICA_INFO, {"brokerName": broker_name})
    if resp.code != SUCCESS:
        return None
    master_id = resp.ext_fields.get("masterBrokerId")
    return {
        "masterBrokerId": int(master_id) if master_id not in (None, "") else None,
        "masterAddress": resp.ext_fields.get("masterAddress") or "",
        "masterEpoch": int(resp.ext_fields.get("masterEpoch", 0)),
        "syncStateSet": sorted(int(b) for b in (resp.json_body().get("syncStateSet") or [])),
    }
