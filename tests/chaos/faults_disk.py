"""Disk fault kinds: one replica's disk full, slow or failing.

- disk_full: every broker's store is a small ext4 file system of its own (a sparse image in the
  broker's run directory on a loop device, mounted at its store directory: `prepare`, called by
  cluster.py before the nodes start; `teardown` after they stop). The fault fills one replica's file
  system (master or slave) with a preallocated filler file that leaves almost nothing free; the heal
  deletes it. What fills up first: the next CommitLog segment (preallocated to full size, so the
  chaos brokers' segments are small: cluster.py), ConsumeQueue and index pages, and the store's own
  disk check (every 10 s) turns it read-only ("disk N% used") until a check after the heal.
- slow_disk: one replica's CommitLog and/or ConsumeQueue syncs each finish 200-800 ms late (the
  storage fail points `commitlog_stall@0`, `consume_queue_stall@0`).
- failing_disk: EIO on every write or every fdatasync of one replica's CommitLog or ConsumeQueues
  (`commitlog_write@0`, `commitlog_fdatasync@0`, `consume_queue_write@0`, `consume_queue_fdatasync@0`)
  for the fault's duration. After a failed CommitLog fdatasync the store refuses writes until the
  broker restarts (fsyncgate: a later sync that succeeds proves nothing), so the heal restarts a
  replica whose store is still read-only then, as an operator would.

slow_disk and failing_disk switch fail points at runtime: each broker follows a file of its own
(`FAILPOINTS_FILE`, re-read every 0.5 s; `node_env`, called by cluster.py), which needs a broker built
with `--features failpoints` (scripts/chaos.sh builds one). Without such a build those two kinds are
not drawn, and without root, mkfs.ext4 or loop devices disk_full is not; a note says so. Overlapping
faults on one broker add up: its file holds the points of every fault in force.
"""

import mmap
import os
import shutil
import subprocess
import sys

import wire

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# The single shard of the chaos brokers (shardCount = 1).
SHARD = 0
IMAGE_BYTES = 256 << 20
# What a disk_full filler leaves free.
LEAVE_BYTES = 64 << 10
FILLER = "chaos-filler-%d"
POINTS_FILE = "failpoints"
# A log line only a failpoints build of the broker holds (storage/src/fault.rs).
FAILPOINTS_MARK = b"fail points: following the file"
EIO = 5
# cluster.py writes this line into a node's log before each start.
START_MARK = b"\n===== start #"
# What a broker logs when its store refuses writes until it restarts.
STICKY_READ_ONLY_MARK = b"store takes no writes until the broker restarts"


def broker_binary():
    """The broker the run will use (as cluster.bin_dir(); cluster.py imports this module)."""
    base = os.environ.get("CHAOS_BIN_DIR") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"), "debug")
    return os.path.join(base, "broker")


def is_failpoints_build(path):
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(FAILPOINTS_MARK) >= 0
    except (OSError, ValueError):
        return False


def loop_fs_missing():
    """Why brokers cannot have file systems of their own here, or None."""
    if os.geteuid() != 0:
        return "not root"
    tools = [t for t in ("mkfs.ext4", "losetup", "mount", "umount") if shutil.which(t) is None]
    if tools:
        return "%s missing" % ", ".join(tools)
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control"
    return None


FAILPOINTS = is_failpoints_build(broker_binary())
LOOP_MISSING = loop_fs_missing()
KINDS = ([] if LOOP_MISSING else ["disk_full"]) + (["slow_disk", "failing_disk"] if FAILPOINTS else [])
CLASSIC_KINDS = list(KINDS)
if LOOP_MISSING:
    print("chaos: the disk_full kind is not drawn: %s (brokers need ext4 file systems on loop devices)"
          % LOOP_MISSING, file=sys.stderr)
if not FAILPOINTS:
    print("chaos: the kinds slow_disk and failing_disk are not drawn: %s is not a failpoints build "
          "(cargo build -p broker --features failpoints; scripts/chaos.sh builds one)" % broker_binary(),
          file=sys.stderr)


def _run(argv):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), out.stderr.decode(errors="replace").strip()))
    return out.stdout.decode().strip()


# ---- the brokers' file systems (cluster.py) ----

def prepare(cluster):
    """Gives every broker a file system of its own at its store directory, before the nodes start.
    Without the means, or when a step fails, the brokers keep plain directories (disk_full faults
    then fail to start, each reported by the nemesis)."""
    cluster.disk_mounts = {}
    cluster.disk_points = {}
    if LOOP_MISSING:
        return
    for name in cluster.brokers:
        node_dir = os.path.join(cluster.workdir, name)
        store = os.path.join(node_dir, "store")
        image = os.path.join(node_dir, "disk.img")
        os.makedirs(store, exist_ok=True)
        dev = None
        try:
            with open(image, "wb") as f:
                f.truncate(IMAGE_BYTES)
            # No blocks reserved for root (the brokers run as root): full means full.
            _run(["mkfs.ext4", "-q", "-F", "-m", "0", image])
            dev = _run(["losetup", "-f", "--show", image])
            _run(["mount", dev, store])
        except (OSError, RuntimeError, subprocess.SubprocessError) as err:
            if dev:
                subprocess.run(["losetup", "-d", dev], stderr=subprocess.DEVNULL)
            print("chaos: %s keeps a plain store directory (disk_full cannot hit it): %s" % (name, err),
                  file=sys.stderr)
            continue
        cluster.disk_mounts[name] = (dev, store)


def teardown(cluster):
    """Unmounts and detaches the brokers' file systems (after the brokers stopped)."""
    for name, (dev, store) in sorted(getattr(cluster, "disk_mounts", {}).items()):
        if subprocess.run(["umount", store], stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["umount", "-l", store], stderr=subprocess.DEVNULL)
        subprocess.run(["losetup", "-d", dev], stderr=subprocess.DEVNULL)
    cluster.disk_mounts = {}


def node_env(cluster, name):
    """The environment a broker starts with: the fail point file it follows (a failpoints build)."""
    if not FAILPOINTS or name not in cluster.brokers:
        return {}
    path = os.path.join(cluster.workdir, name, POINTS_FILE)
    if not os.path.exists(path):
        _write_points(cluster, name)
    return {"FAILPOINTS_FILE": path}


def _write_points(cluster, name):
    """Writes broker `name`'s fail point file from the faults in force (atomically: the broker may read
    it at any moment)."""
    lines = {}
    per_broker = getattr(cluster, "disk_points", {}).get(name, {})
    for fault_id in sorted(per_broker):
        lines.update(per_broker[fault_id])
    path = os.path.join(cluster.workdir, name, POINTS_FILE)
    with open(path + ".tmp", "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in sorted(lines.items())))
    os.replace(path + ".tmp", path)


def _set_points(cluster, name, fault_id, points):
    per_broker = cluster.disk_points.setdefault(name, {})
    if points:
        per_broker[fault_id] = points
    else:
        per_broker.pop(fault_id, None)
    _write_points(cluster, name)


def _store_read_only(cluster, name):
    """Whether broker `name` says its store refuses writes (None: it did not answer)."""
    try:
        reply = wire.request(cluster.broker_addrs[name], 28, timeout=1.0)  # GET_BROKER_RUNTIME_INFO
        table = reply.json_body().get("table") or {}
    except (wire.NotSent, wire.Unknown, ValueError, AttributeError):
        return None
    return str(table.get("storeReadOnly", "false")) == "true"


def _log_says_read_only_until_restart(cluster, name):
    """Whether broker `name`'s log, since its last start, says its store takes no writes until a
    restart (a failed CommitLog fdatasync or tail cut: storage/src/group_commit.rs, truncate.rs).
    Read from the run directory, so it needs no network: another fault (a slow or cut link) may leave
    the broker unable to answer `_store_read_only` in time."""
    try:
        with open(os.path.join(cluster.workdir, name + ".log"), "rb") as f:
            log = f.read()
    except OSError:
        return False
    since_start = log[log.rfind(START_MARK) + 1:]  # the whole log when the mark is missing
    return STICKY_READ_ONLY_MARK in since_start


# ---- the faults (nemesis.py) ----

def start(nem, fault, event, rng):
    cluster = nem.cluster
    kind = fault["kind"]
    name = rng.choice(cluster.groups[fault["group"]])  # a broker of the fault's group
    master = cluster.master(fault["group"])
    role = "master" if name == master else "slave"
    fault["node"] = name
    if kind == "disk_full":
        if name not in getattr(cluster, "disk_mounts", {}):
            raise RuntimeError("%s has no file system of its own" % name)
        store = cluster.disk_mounts[name][1]
        path = os.path.join(store, FILLER % fault["id"])
        st = os.statvfs(store)
        size = max(st.f_bavail * st.f_frsize - LEAVE_BYTES, 4096)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError:
            pass  # a second filler on a full disk: the first already did it
        finally:
            os.close(fd)
        fault["filler"] = path
        after = os.statvfs(store)
        fault["target"] = "%s(%s) %d KiB left" % (name, role, after.f_bavail * after.f_frsize // 1024)
    elif kind == "slow_disk":
        which = rng.choice(["commitlog", "consume_queue", "both"])
        ms = rng.randrange(200, 900, 100)
        points = {}
        if which in ("commitlog", "both"):
            points["commitlog_stall@%d" % SHARD] = "return(%d)" % ms
        if which in ("consume_queue", "both"):
            points["consume_queue_stall@%d" % SHARD] = "return(%d)" % ms
        _set_points(cluster, name, fault["id"], points)
        fault["target"] = "%s(%s) %s syncs +%d ms" % (name, role, which, ms)
    elif kind == "failing_disk":
        point = rng.choice(["commitlog_write", "commitlog_fdatasync", "consume_queue_write",
                            "consume_queue_fdatasync"])
        _set_points(cluster, name, fault["id"], {"%s@%d" % (point, SHARD): "return(%d)" % EIO})
        fault["point"] = point
        fault["target"] = "%s(%s) %s EIO" % (name, role, point)
    else:
        raise ValueError("faults_disk has no kind %s" % kind)


def heal(nem, fault):
    cluster = nem.cluster
    name = fault["node"]
    if fault["kind"] == "disk_full":
        try:
            os.remove(fault["filler"])
        except FileNotFoundError:
            pass
        return
    _set_points(cluster, name, fault["id"], None)
    if fault["kind"] == "failing_disk" and fault["point"] == "commitlog_fdatasync":
        # A store whose sync failed stays read-only whatever the file says now: restart it.
        if not cluster.alive(name) or name in cluster.paused:
            return
        # Asked first; its log decides when it does not answer (seed 343813582: a slow_link on the
        # same broker at the heal timed the question out, the broker was not restarted and its group
        # had no writable master for the rest of the run).
        if _store_read_only(cluster, name) or _log_says_read_only_until_restart(cluster, name):
            fault["target"] += " +restart"
            cluster.kill(name)
            cluster.start(name)
