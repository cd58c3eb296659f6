"""Clock fault kinds: a node's clock jumped or skewed, applied through cluster.py.

Each kind is drawn by the nemesis like its own: `start(nemesis, fault, event, rng)` resolves the
targets, applies the fault and sets fault["target"]; `heal(nemesis, fault)` ends it.
"""

KINDS = []
CLASSIC_KINDS = []


def start(nem, fault, event, rng):
    raise ValueError("faults_clock has no kind %s" % fault["kind"])


def heal(nem, fault):
    raise ValueError("faults_clock has no kind %s" % fault["kind"])
