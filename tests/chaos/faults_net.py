"""Network fault kinds beyond nemesis.py's own (partition shapes, slow links), applied through net.py.

Each kind is drawn by the nemesis like its own: `start(nemesis, fault, event, rng)` resolves the
targets, applies the fault and sets fault["target"]; `heal(nemesis, fault)` ends it.
"""

KINDS = []
CLASSIC_KINDS = []


def start(nem, fault, event, rng):
    raise ValueError("faults_net has no kind %s" % fault["kind"])


def heal(nem, fault):
    nem.net.heal(fault["id"])
