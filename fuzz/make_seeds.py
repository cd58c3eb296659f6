"""Writes the seed corpus (fuzz/corpus/<target>/seed-*) from RocketMQ's documented formats.

Run once from the repository root: python3 fuzz/make_seeds.py. The seeds are kept in the repository;
cargo fuzz adds what it finds to the same folders (scripts/fuzz-ci.sh runs with a throwaway copy).
"""

import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

BLANK_MAGIC = -875286124
MAGIC_V1 = -626843481


def java_crc(body):
    return struct.unpack(">i", struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF))[0]


def json_header(code, ext, flag=0):
    return json.dumps({"code": code, "language": "JAVA", "version": 453, "opaque": 7, "flag": flag,
                       "remark": None, "extFields": ext, "serializeTypeCurrentRPC": "JSON"}).encode()


def rocketmq_header(code, ext):
    fields = b"".join(struct.pack(">h", len(k)) + k.encode() + struct.pack(">i", len(v)) + v.encode()
                      for k, v in ext.items())
    return (struct.pack(">hbhii", code, 0, 453, 7, 0) + struct.pack(">i", 0)
            + struct.pack(">i", len(fields)) + fields)


def frame(header, body, serialize_type=0):
    return struct.pack(">ii", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


def record(pos, queue_offset, body, topic, props):
    t = topic.encode()
    p = props.encode()
    size = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(body) + 1 + len(t) + 2 + len(p)
    return (struct.pack(">iiiiiqqiq", size, MAGIC_V1, java_crc(body), 0, 0, queue_offset, pos, 0,
                        1700000000000)
            + bytes([127, 0, 0, 1]) + struct.pack(">i", 40000) + struct.pack(">q", 1700000000001)
            + bytes([127, 0, 0, 1]) + struct.pack(">i", 10911) + struct.pack(">iq", 0, 0)
            + struct.pack(">i", len(body)) + body + bytes([len(t)]) + t + struct.pack(">h", len(p)) + p)


def batch(items):
    out = b""
    for body, props in items:
        p = props.encode()
        size = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(p)
        out += struct.pack(">iiiii", size, 0, java_crc(body), 0, len(body)) + body + struct.pack(">h", len(p)) + p
    return out


def register_compressed():
    """A compressed REGISTER_BROKER body in Java's RegisterBrokerBody.encode(true) layout (zlib)."""
    def entry(b):
        return struct.pack(">i", len(b)) + b
    plain = entry(b'{"counter":1,"stateVersion":0,"timestamp":1700000000000}') + struct.pack(">i", 2)
    plain += entry(b'TopicA 4 4 6 SINGLE_TAG {"+message.type":"NORMAL"}') + entry(b"TopicB 1 1 6 MULTI_TAG")
    plain += entry(b"[]") + struct.pack(">i", 1)
    plain += entry(b'{"bname":"broker-a","epoch":1,"topic":"TopicA","totalQueues":4}')
    return zlib.compress(plain, 9)


def seeds():
    props = "TAGS\u0001TagA\u0002KEYS\u0001k1\u0002UNIQ_KEY\u0001AC11000100002A9F0000000000000000\u0002"
    send_ext = {"a": "PG", "b": "TopicA", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000",
                "h": "0", "i": props, "j": "0", "k": "false"}
    heartbeat = json.dumps({"clientID": "127.0.0.1@1", "producerDataSet": [{"groupName": "PG"}],
                            "consumerDataSet": [{"groupName": "CG", "consumeType": "CONSUME_PASSIVELY",
                                                 "messageModel": "CLUSTERING",
                                                 "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                                                 "subscriptionDataSet": [{"topic": "TopicA", "subString": "*",
                                                                          "tagsSet": [], "codeSet": [],
                                                                          "subVersion": 1}],
                                                 "unitMode": False}]}).encode()
    first = record(0, 0, b"hello", "TopicA", props)
    second = record(len(first), 1, b"world" * 10, "TopicA", props)
    segment = first + second
    return {
        "frame_decoder": {
            "json-send": frame(json_header(310, send_ext), b"hello"),
            "rocketmq-pull": frame(rocketmq_header(11, {"topic": "TopicA", "queueId": "0"}), b"", 1),
        },
        "json_header": {"send": json_header(310, send_ext), "response": json_header(0, {}, flag=1)},
        "rocketmq_header": {"send": rocketmq_header(310, send_ext)},
        "batch_decoder": {"two": batch([(b"one", props), (b"two" * 5, "")])},
        "json_bodies": {"heartbeat": heartbeat, "register-compressed": register_compressed()},
        "record_decoder": {"record": first},
        "recovery_scan": {
            "two-records": segment,
            "torn-tail": segment[:-7],
            "blank-end": first + struct.pack(">ii", 16384 - len(first), BLANK_MAGIC) + b"\0" * (16384 - len(first) - 8)
                         + second.replace(struct.pack(">q", len(first)), struct.pack(">q", 16384), 1),
        },
    }


def main():
    for target, files in seeds().items():
        folder = os.path.join(HERE, "corpus", target)
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(folder, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
