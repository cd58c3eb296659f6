"""Network fault kinds beyond nemesis.py's own (partition shapes, slow links), applied through net.py.

Each kind is drawn by the nemesis like its own: `start(nemesis, fault, event, rng)` resolves the
targets, applies the fault and sets fault["target"]; `heal(nemesis, fault)` ends it.

- partition_halves: the nodes split at random into two halves, the clients on one side at random.
- partition_ring: the nodes and the clients on a ring in random order, each reaching its nearest
  neighbours on both sides, as many as make a majority of the ring: everyone sees a majority, no two
  see the same one (Jepsen's "majorities ring"). Controller layout only: with the classic layout's 3
  nodes and the clients a majority ring is no partition at all.
- partition_bridge: two halves that do not see each other, and one node in both (it sees everyone).
- slow_link: one node's link (both directions) rate-limited to 100-400 kbit/s by a tbf qdisc, so what
  it sends and receives queues behind the limit (up to net.SLOW_QUEUE_MS, then dropped).
"""

import net

KINDS = ["partition_halves", "partition_ring", "partition_bridge", "slow_link"]
CLASSIC_KINDS = ["partition_halves", "partition_bridge", "slow_link"]


def _halves(members):
    cut = len(members) // 2
    return members[:cut], members[cut:]


def _sees_groups(groups):
    """Each member sees the members of every group it belongs to."""
    sees = {}
    for group in groups:
        for m in group:
            sees.setdefault(m, set()).update(group)
    return sees


def _show(group):
    return ",".join(group)


def ring_sees(ring):
    """On a ring, each member's view: itself and its k nearest neighbours on each side, with the
    smallest k that makes that a majority of the ring."""
    n = len(ring)
    majority = n // 2 + 1
    k = majority // 2  # 2k others and itself: at least a majority
    return {m: {ring[(i + d) % n] for d in range(-k, k + 1)} for i, m in enumerate(ring)}


def start(nem, fault, event, rng):
    kind = fault["kind"]
    nodes = list(nem.cluster.nodes)
    if kind == "partition_halves":
        rng.shuffle(nodes)
        a, b = _halves(nodes)
        (a if rng.random() < 0.5 else b).append(net.CLIENTS)
        fault["target"] = "%s | %s" % (_show(a), _show(b))
        nem.net.partition(fault["id"], _sees_groups([a, b]))
    elif kind == "partition_ring":
        ring = nodes + [net.CLIENTS]
        rng.shuffle(ring)
        fault["target"] = "ring " + "-".join(ring)
        nem.net.partition(fault["id"], ring_sees(ring))
    elif kind == "partition_bridge":
        rng.shuffle(nodes)
        bridge, rest = nodes[0], nodes[1:]
        a, b = _halves(rest)
        (a if rng.random() < 0.5 else b).append(net.CLIENTS)
        fault["target"] = "%s bridges %s | %s" % (bridge, _show(a), _show(b))
        nem.net.partition(fault["id"], _sees_groups([a + [bridge], b + [bridge]]))
    elif kind == "slow_link":
        # The drawn group's master half the time (its link carries the sends, the replication and
        # the pulls), else one of that group's brokers or a controller.
        group = fault.get("group")
        master = nem.cluster.master(group)
        candidates = nem.cluster.groups[group] + nem.cluster.controllers
        name = master if master and rng.random() < 0.5 else rng.choice(candidates)
        kbit = 10 * event["percent"]
        fault["target"] = "%s@%dkbit" % (name, kbit)
        nem.net.slow_link(fault["id"], name, kbit)
    else:
        raise ValueError("faults_net has no kind %s" % kind)


def heal(nem, fault):
    nem.net.heal(fault["id"])
