"""Host fault kinds beyond nemesis.py's own (a node's clock, its disk), applied through cluster.py.

Each kind is drawn by the nemesis like its own: `start(nemesis, fault, event, rng)` resolves the
targets, applies the fault and sets fault["target"]; `heal(nemesis, fault)` ends it.
"""

KINDS = []
CLASSIC_KINDS = []


def start(nem, fault, event, rng):
    raise ValueError("faults_host has no kind %s" % fault["kind"])


def heal(nem, fault):
    raise ValueError("faults_host has no kind %s" % fault["kind"])
