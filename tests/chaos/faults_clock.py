"""Clock fault kinds: a node's wall clock jumped or skewed, with libfaketime.

Every node's process starts under `LD_PRELOAD=libfaketime.so.1` (cluster.py takes `node_env`) with a
timestamp file of its own in its node directory, holding the node's offset ("+0" until a fault). The
library reads that file at every wall-clock call (FAKETIME_NO_CACHE: about 3.7 us a call here; the
monotonic clocks do not read it), so a fault or a heal written there is in force at once, and a
restarted process starts with it. With the library's cache (FAKETIME_CACHE_DURATION=1) a change took
0.2-1.9 s to arrive: a heal was recorded before it was in force, and timers a broker fired early in
that gap fell outside the fault's window (clock_jump seed 3, timer_early). Only the
wall clock (CLOCK_REALTIME, gettimeofday, time) moves: the monotonic clocks are left alone
(FAKETIME_DONT_FAKE_MONOTONIC) because no real host's monotonic clock jumps, and file times are not
shifted (NO_FAKE_STAT). Without the library (scripts/setup-test-host.sh installs it: Debian's
`faketime`) the clock kinds are not drawn and a note says so; CHAOS_FAKETIME=0 turns the preload off.

- clock_jump: one node's wall clock jumps 5-60 s forward or backward, and back at the heal.
- clock_skew: 2-4 nodes' wall clocks set apart at once, each by its own offset (5-60 s either way).

Overlapping clock faults on one node add up. `python3 tests/chaos/faults_clock.py` checks, without
root, that a broker under the preload stores messages with the offset it is given (their store
timestamps) and measures the preload's cost on sequential sends.
"""

import glob
import os
import sys

LIB_PATHS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/*/faketime/libfaketime.so.1",
             "/usr/local/lib/faketime/libfaketime.so.1"]
OFFSET_FILE = "faketime"


def library():
    """libfaketime's path, or None (then, or with CHAOS_FAKETIME=0, nothing is preloaded)."""
    if os.environ.get("CHAOS_FAKETIME", "1") == "0":
        return None
    for pattern in LIB_PATHS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


LIB = library()
if LIB:
    KINDS = ["clock_jump", "clock_skew"]
    CLASSIC_KINDS = ["clock_jump", "clock_skew"]
else:
    KINDS = []
    CLASSIC_KINDS = []
    print("chaos: libfaketime not found or CHAOS_FAKETIME=0 (scripts/setup-test-host.sh installs the faketime "
          "package): the clock kinds clock_jump and clock_skew are not drawn", file=sys.stderr)


def write_offset(node_dir, seconds):
    """Set the wall-clock offset of the node whose directory is `node_dir` (atomically: the library may
    read the file at any moment)."""
    os.makedirs(node_dir, exist_ok=True)
    path = os.path.join(node_dir, OFFSET_FILE)
    with open(path + ".tmp", "w") as f:
        f.write("%+d\n" % seconds)
    os.replace(path + ".tmp", path)


def node_env(node_dir):
    """The environment that puts a node's process under its faked clock ({} without the library). The
    offset file is created at "+0" unless a fault already set it."""
    if not LIB:
        return {}
    path = os.path.join(node_dir, OFFSET_FILE)
    if not os.path.exists(path):
        write_offset(node_dir, 0)
    preload = os.environ.get("LD_PRELOAD")
    return {"LD_PRELOAD": LIB + (":" + preload if preload else ""), "FAKETIME_TIMESTAMP_FILE": path,
            "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1", "DONT_FAKE_MONOTONIC": "1",
            "NO_FAKE_STAT": "1", "FAKETIME_DONT_RESET": "1"}


def _offsets(nem):
    """{node: {fault id: seconds}} of the clock faults now on, kept on the nemesis."""
    if not hasattr(nem, "clock_offsets"):
        nem.clock_offsets = {name: {} for name in nem.cluster.nodes}
    return nem.clock_offsets


def _apply(nem, name):
    write_offset(os.path.join(nem.cluster.workdir, name), sum(_offsets(nem)[name].values()))


def _draw_offset(rng):
    return rng.choice((-1, 1)) * rng.randint(5, 60)


def start(nem, fault, event, rng):
    kind = fault["kind"]
    nodes = list(nem.cluster.nodes)
    if kind == "clock_jump":
        targets = {rng.choice(nodes): _draw_offset(rng)}
    elif kind == "clock_skew":
        rng.shuffle(nodes)
        targets = {}
        for name in nodes[:rng.randint(2, min(4, len(nodes)))]:
            offset = _draw_offset(rng)
            while offset in targets.values():
                offset = _draw_offset(rng)
            targets[name] = offset
    else:
        raise ValueError("faults_clock has no kind %s" % kind)
    fault["clock"] = targets
    fault["target"] = ",".join("%s%+ds" % kv for kv in targets.items())
    for name, offset in targets.items():
        _offsets(nem)[name][fault["id"]] = offset
        _apply(nem, name)


def heal(nem, fault):
    for name in fault.get("clock", {}):
        _offsets(nem)[name].pop(fault["id"], None)
        _apply(nem, name)


# --- the check: python3 tests/chaos/faults_clock.py [--seconds S] -------------------------------------

def _store_timestamps(body):
    """(queue offset, store timestamp ms) of each record of a pull body."""
    import struct
    out = []
    pos = 0
    while pos + 8 <= len(body):
        total, = struct.unpack_from(">i", body, pos)
        if total <= 0 or pos + total > len(body):
            break
        sys_flag, = struct.unpack_from(">i", body, pos + 36)
        queue_offset, = struct.unpack_from(">q", body, pos + 20)
        at = pos + 48 + (20 if sys_flag & 0x10 else 8)
        stored, = struct.unpack_from(">q", body, at)
        out.append((queue_offset, stored))
        pos += total
    return out


def main():
    import argparse
    import time
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import cluster as cl
    import harness
    import wire
    ap = argparse.ArgumentParser(description="Does a broker under libfaketime see the offsets we write, and "
                                 "what does the preload cost?")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each send-rate measurement")
    args = ap.parse_args()
    if not LIB:
        print("faults_clock: no libfaketime here")
        return 2
    import tempfile
    work = tempfile.mkdtemp(prefix="rmq-clock-")
    problems = []

    def run_broker(tag, preload):
        node_dir = os.path.join(work, tag)
        os.makedirs(node_dir, exist_ok=True)
        ns_port = harness.free_port()
        port = harness.free_port(below=2, above=1)
        env = dict(os.environ, RUST_LOG="info", HOME=node_dir)
        if preload:
            env.update(node_env(node_dir))
        conf = os.path.join(node_dir, "broker.toml")
        with open(conf, "w") as f:
            f.write('brokerClusterName = "Clock"\nbrokerName = "clock"\nbrokerIP1 = "127.0.0.1"\n'
                    'namesrvAddr = "127.0.0.1:%d"\nlistenPort = %d\nstorePathRootDir = "%s"\n'
                    'flushDiskType = "SYNC_FLUSH"\nautoCreateTopicEnable = true\nshardCount = 1\n'
                    % (ns_port, port, os.path.join(node_dir, "store")))
        # Both stopped by harness.stop_everything() at the end.
        harness.Proc("namesrv", [os.path.join(cl.bin_dir(), "namesrv"), "--listen", "127.0.0.1:%d" % ns_port],
                     os.path.join(node_dir, "namesrv.log"), env=env)
        harness.Proc("broker", [os.path.join(cl.bin_dir(), "broker"), "--config", conf],
                     os.path.join(node_dir, "broker.log"), env=env, cwd=node_dir)
        if not harness.wait_port(port, 60):
            raise RuntimeError("broker %s did not listen (log %s)" % (tag, os.path.join(node_dir, "broker.log")))
        addr = "127.0.0.1:%d" % port
        end = time.monotonic() + 30
        while True:
            try:
                wire.create_topic(addr, "ClockTopic", 1)
                break
            except (wire.NotSent, wire.Unknown):
                if time.monotonic() > end:
                    raise
                time.sleep(0.3)
        return node_dir, addr

    def stored_offset(addr, n):
        """Send one message, pull it back: its store timestamp minus the real time of the send, in s."""
        before = time.time()
        reply = wire.send(addr, "ClockTopic", 0, "clock-%d" % n, b"clock")
        after = time.time()
        if reply.code != wire.SUCCESS:
            raise RuntimeError("send refused: %d %s" % (reply.code, reply.remark))
        offset = int(reply.ext["queueOffset"])
        pulled, _ = wire.pull(addr, "clock-check", "ClockTopic", 0, offset, max_nums=1)
        stamps = [ts for off, ts in _store_timestamps(pulled.body) if off == offset]
        if not stamps:
            raise RuntimeError("the message at offset %d was not pulled back" % offset)
        ts = stamps[0] / 1000.0
        return (ts - after) if ts > after else (ts - before) if ts < before else 0.0

    def rate(addr, seconds):
        n = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if wire.send(addr, "ClockTopic", 0, "rate-%d" % n, b"x" * 100).code == wire.SUCCESS:
                n += 1
        return n

    try:
        node_dir, addr = run_broker("faked", True)
        for n, want in enumerate((0, -30, 45, 0)):
            write_offset(node_dir, want)
            time.sleep(0.5)
            seen = stored_offset(addr, n)
            print("offset written %+d s: the broker stored the message %+.3f s from the real time" % (want, seen))
            if abs(seen - want) > 1.0:
                problems.append("offset %+d s: the store timestamp was %+.3f s off" % (want, seen))
        _, plain_addr = run_broker("plain", False)
        # Both brokers up at once, measured in alternating half-second slices, so that the loaded
        # machine's ups and downs fall on both alike.
        faked = plain = 0
        slices = max(1, int(args.seconds * 2))
        for _ in range(slices):
            faked += rate(addr, 0.5)
            plain += rate(plain_addr, 0.5)
        print("sequential sends (100-byte bodies, one connection per request, SYNC_FLUSH), alternating "
              "half-second slices, %.1f s each: %.0f/s under the preload, %.0f/s without"
              % (slices / 2, faked * 2 / slices, plain * 2 / slices))
    finally:
        harness.stop_everything()
    for p in problems:
        print("PROBLEM %s" % p)
    print("faults_clock check: %s%s" % ("FAIL" if problems else "OK", (" (files in %s)" % work) if problems else ""))
    if not problems:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
