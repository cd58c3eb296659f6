#!/usr/bin/env python3
"""The consume checkers on small made-up histories: each failure they exist for is caught, and what
RocketMQ allows (duplicates after a rebalance, a read of a message never acknowledged) is not; and
the failing_disk heal's restart decision (faults_disk.py) on a made-up broker log.
No root, no cluster: `python3 tests/chaos/test_checker.py`.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import checker_features as cf  # noqa: E402
import features  # noqa: E402


def sends(*acks, unacked=()):
    """acks: (key, queue, offset, t); unacked: keys invoked without an acknowledgement."""
    history = []
    for key, queue, offset, t in acks:
        history.append({"type": "invoke", "key": key, "queue": queue, "t": t - 0.01})
        history.append({"type": "ok", "key": key, "queue": queue, "offset": offset, "t": t, "addr": "m"})
    for key in unacked:
        history.append({"type": "invoke", "key": key, "queue": 0, "t": 0.0})
        history.append({"type": "unknown", "key": key, "t": 0.1})
    return history


def reset(t, queue, to, frm=None, reason="rebalance", consumer=0):
    return {"type": "reset", "t": t, "consumer": consumer, "queue": queue, "from": frm, "to": to, "reason": reason}


def consume(t, queue, offset, key, consumer=0):
    return {"type": "consume", "t": t, "consumer": consumer, "queue": queue, "offset": offset, "key": key,
            "addr": "m"}


def commit(t, queue, offset, consumer=0):
    return {"type": "commit", "t": t, "consumer": consumer, "queue": queue, "offset": offset}


def run(consumes, history, drained=True):
    problems, facts = checker.check_consume(consumes, history, [], 10.0, drained)
    return " | ".join(problems), facts


class ConsumeCheckers(unittest.TestCase):
    def test_a_clean_history_passes(self):
        h = sends(("a", 0, 0, 1.0), ("b", 0, 1, 2.0))
        problems, facts = run([reset(0.5, 0, 0), consume(1.1, 0, 0, "a"), consume(2.1, 0, 1, "b")], h)
        self.assertEqual(problems, "")
        self.assertEqual(facts["consumed"], 2)
        self.assertEqual(facts["consume_availability"]["longest_gap_s"], 7.9)

    def test_a_phantom_fails(self):
        problems, _ = run([reset(0.5, 0, 0), consume(1.1, 0, 0, "x")], sends())
        self.assertIn("consume_phantom", problems)

    def test_an_acked_message_at_another_offset_fails(self):
        h = sends(("a", 0, 3, 1.0))
        problems, _ = run([reset(0.5, 0, 2), consume(1.1, 0, 2, "a")], h)
        self.assertIn("consume_misplaced", problems)

    def test_going_back_without_a_reset_fails_and_with_one_passes(self):
        h = sends(("a", 0, 0, 1.0), ("b", 0, 1, 2.0))
        back = [reset(0.5, 0, 0), consume(1.1, 0, 0, "a"), consume(2.1, 0, 1, "b"), consume(2.2, 0, 0, "a")]
        problems, _ = run(back, h)
        self.assertIn("consume_order", problems)
        again = back[:3] + [commit(2.15, 0, 0), reset(2.15, 0, 0, frm=1), back[3]]
        problems, facts = run(again, h)
        self.assertEqual(problems, "")
        self.assertEqual(facts["consume_duplicates"], 1)
        self.assertEqual(facts["consume_resets"]["backwards"], 1)

    def test_jumping_an_acked_offset_fails(self):
        h = sends(("a", 0, 0, 1.0), ("b", 0, 1, 2.0), ("c", 0, 2, 3.0))
        problems, _ = run([reset(0.5, 0, 0), consume(1.1, 0, 0, "a"), consume(3.1, 0, 2, "c")], h)
        self.assertIn("consume_order: consumer 0 jumped", problems)
        self.assertIn("consume_missed", problems)

    def test_an_offset_nobody_committed_fails(self):
        h = sends(("a", 0, 0, 1.0))
        problems, _ = run([reset(0.5, 0, 5)], h, drained=False)
        self.assertIn("which no member committed", problems)

    def test_a_dirty_read_fails_and_its_miss_is_counted_apart(self):
        # "u" (never acknowledged) read at offset 0 on an old master; "a" acknowledged there later.
        h = sends(("a", 0, 0, 2.0), unacked=["u"])
        problems, facts = run([reset(0.5, 0, 0), consume(1.0, 0, 0, "u")], h)
        self.assertIn("consume_dirty_read", problems)
        self.assertNotIn("consume_missed", problems)
        self.assertEqual((facts["dirty_reads"], facts["consume_missed_after_dirty_read"]), (1, 1))

    def test_an_unacknowledged_read_elsewhere_is_no_dirty_read(self):
        h = sends(("a", 0, 0, 2.0), unacked=["u"])
        problems, facts = run([reset(0.5, 0, 0), consume(2.1, 0, 0, "a"), consume(2.2, 0, 1, "u")], h)
        self.assertEqual(problems, "")
        self.assertEqual(facts["dirty_reads"], 0)

    def test_a_miss_without_a_dirty_read_fails_once_drained(self):
        h = sends(("a", 0, 0, 2.0), unacked=["u"])
        problems, _ = run([reset(0.5, 0, 0)], h)
        self.assertIn("consume_missed", problems)
        problems, facts = run([reset(0.5, 0, 0)], h, drained=False)
        self.assertEqual(problems, "")
        self.assertIn("consume_missed_note", facts)


# ---- The features' checkers (checker_features.py): FIFO, transactions, timers.

def fifo_sends(*sends):
    """sends: (skey, seq, acked, t); the FIFO producer's ops."""
    ops = []
    for skey, seq, acked, t in sends:
        key = "%s-%d" % (skey, seq)
        q = features.fifo_queue(skey)
        ops.append({"type": "invoke", "key": key, "skey": skey, "seq": seq, "queue": q, "t": t - 0.01})
        ops.append({"type": "ok" if acked else "unknown", "key": key, "queue": q, "offset": seq, "t": t})
    return ops


def fifo_consume(t, skey, seq, queue=None):
    return {"type": "consume", "t": t, "w": t, "key": "%s-%d" % (skey, seq), "addr": "m", "offset": seq,
            "queue": features.fifo_queue(skey) if queue is None else queue}


class FifoChecker(unittest.TestCase):
    def final(self, *keys):
        return {k: [(0, 0, 0)] for k in keys}

    def test_in_order_with_duplicates_passes(self):
        ops = fifo_sends(("k", 0, True, 1.0), ("k", 1, True, 2.0), ("k", 2, False, 3.0), ("k", 3, True, 4.0))
        cons = [fifo_consume(1.1, "k", 0), fifo_consume(2.1, "k", 1), fifo_consume(2.2, "k", 0),
                fifo_consume(4.1, "k", 3), fifo_consume(4.2, "k", 2)]
        problems, facts = cf.check_fifo(ops, cons, self.final("k-0", "k-1", "k-3"), True)
        self.assertEqual(problems, [])
        self.assertEqual((facts["duplicates"], facts["unacked_late"]), (1, 1))

    def test_acked_messages_out_of_order_fail(self):
        ops = fifo_sends(("k", 0, True, 1.0), ("k", 1, True, 2.0))
        cons = [fifo_consume(2.1, "k", 1), fifo_consume(2.2, "k", 0)]
        problems, facts = cf.check_fifo(ops, cons, self.final("k-0", "k-1"), True)
        self.assertIn("fifo_order", " | ".join(problems))
        self.assertEqual((facts["out_of_order"], facts["skipped"]), (1, 1))

    def test_a_skipped_acked_message_fails(self):
        ops = fifo_sends(("k", 0, True, 1.0), ("k", 1, True, 2.0), ("k", 2, True, 3.0))
        cons = [fifo_consume(1.1, "k", 0), fifo_consume(3.1, "k", 2)]
        problems, _ = cf.check_fifo(ops, cons, self.final("k-0", "k-2"), True)
        text = " | ".join(problems)
        self.assertIn("before acknowledged numbers [1]", text)
        self.assertIn("fifo_missed", text)
        self.assertIn("fifo_lost", text)

    def test_the_wrong_queue_fails(self):
        ops = fifo_sends(("k", 0, True, 1.0))
        wrong = (features.fifo_queue("k") + 1) % features.QUEUES
        problems, _ = cf.check_fifo(ops, [fifo_consume(1.1, "k", 0, queue=wrong)], self.final("k-0"), True)
        self.assertIn("fifo_queue", " | ".join(problems))


def tx_ops(*txs):
    """txs: (key, decision, end_acked); a transaction ended at once."""
    ops = []
    for i, (key, decision, acked) in enumerate(txs):
        t = 1.0 + i
        ops.append({"type": "invoke", "key": key, "decision": decision, "mode": "explicit", "t": t})
        ops.append({"type": "half_ok", "key": key, "phys": 100 * i, "queue_offset": i, "t": t + 0.01})
        if acked is None:
            ops.append({"type": "end_error", "key": key, "outcome": decision, "from_check": False, "t": t + 0.02,
                        "error": "timeout"})
        else:
            ops.append({"type": "end", "key": key, "outcome": decision, "from_check": False, "addr": "m",
                        "code": 0 if acked else 1, "remark": None, "t": t + 0.02})
    return ops


def tx_consume(t, key, sys_flag=0x8):
    return {"type": "consume", "t": t, "w": t, "key": key, "addr": "m", "queue": 0, "offset": 0,
            "sys_flag": sys_flag}


class TxChecker(unittest.TestCase):
    def test_commits_delivered_and_rollbacks_not_pass(self):
        ops = tx_ops(("c", "commit", True), ("r", "rollback", True), ("u", "commit", None))
        problems, facts = cf.check_tx(ops, [tx_consume(2.0, "c"), tx_consume(2.5, "c")], {"c": [(0, 0, 8)]}, True)
        self.assertEqual(problems, [])
        self.assertEqual((facts["committed"], facts["unresolved"], facts["duplicates"]), (1, 1, 1))

    def test_a_delivered_rollback_fails(self):
        ops = tx_ops(("r", "rollback", None))
        problems, _ = cf.check_tx(ops, [tx_consume(2.0, "r")], {}, True)
        self.assertIn("tx_rollback_delivered", " | ".join(problems))
        problems, _ = cf.check_tx(ops, [], {"r": [(0, 0, 8)]}, True)
        self.assertIn("tx_rollback_delivered", " | ".join(problems))

    def test_a_lost_commit_fails(self):
        ops = tx_ops(("c", "commit", True))
        problems, _ = cf.check_tx(ops, [tx_consume(2.0, "c")], {}, True)
        self.assertIn("is not on the final master (consumed)", " | ".join(problems))
        problems, _ = cf.check_tx(ops, [], {"c": [(0, 0, 8)]}, True)
        self.assertIn("never consumed", " | ".join(problems))
        problems, _ = cf.check_tx(ops, [], {"c": [(0, 0, 8)]}, False)
        self.assertEqual(problems, [])

    def test_a_commit_answered_on_a_check_counts(self):
        ops = [{"type": "invoke", "key": "c", "decision": "commit", "mode": "none", "t": 1.0},
               {"type": "half_ok", "key": "c", "phys": 0, "queue_offset": 0, "t": 1.1},
               {"type": "check", "key": "c", "addr": "m", "decision": "commit", "t": 7.0},
               {"type": "end", "key": "c", "outcome": "commit", "from_check": True, "addr": "m", "code": 0,
                "remark": None, "t": 7.1}]
        problems, facts = cf.check_tx(ops, [], {}, True)
        self.assertIn("tx_commit_lost", " | ".join(problems))
        self.assertEqual((facts["checks"], facts["committed"]), (1, 1))

    def test_a_half_message_consumed_fails(self):
        ops = tx_ops(("c", "commit", True))
        problems, _ = cf.check_tx(ops, [tx_consume(2.0, "c", sys_flag=0x4)], {"c": [(0, 0, 8)]}, True)
        self.assertIn("tx_not_committed_type", " | ".join(problems))


def timer_ops(*timers):
    """timers: (key, kind, sent_w, due_w, acked)."""
    ops = []
    for key, kind, sent, due, acked in timers:
        ops.append({"type": "invoke", "key": key, "kind": kind, "due_w": due, "t": sent, "w": sent})
        ops.append({"type": "ok" if acked else "unknown", "key": key, "t": sent + 0.01, "w": sent + 0.01})
    return ops


def timer_consume(w, key, store_w=None):
    return {"type": "consume", "t": w, "w": w, "key": key, "addr": "m", "queue": 0, "offset": 0,
            "store_ms": int((w if store_w is None else store_w) * 1000)}


class TimerChecker(unittest.TestCase):
    def test_on_time_and_late_pass(self):
        ops = timer_ops(("a", "timer", 1.0, 3.0, True), ("b", "delay", 1.0, 6.0, True))
        cons = [timer_consume(3.01, "a"), timer_consume(13.0, "b"), timer_consume(14.0, "b")]
        problems, facts = cf.check_timers(ops, cons, {"a": [], "b": []}, True, [], now_w=20.0)
        self.assertEqual(problems, [])
        self.assertEqual((facts["late_max_s"], facts["late_over_5s"], facts["duplicates"]), (7.0, 1, 1))

    def test_an_early_delivery_fails(self):
        ops = timer_ops(("a", "timer", 1.0, 3.0, True))
        problems, facts = cf.check_timers(ops, [timer_consume(2.5, "a")], {"a": []}, True, [], now_w=20.0)
        self.assertIn("timer_early", " | ".join(problems))
        # Stored early, consumed after the due time: still early.
        problems, _ = cf.check_timers(ops, [timer_consume(3.5, "a", store_w=2.9)], {"a": []}, True, [], now_w=20.0)
        self.assertIn("timer_early", " | ".join(problems))

    def test_early_under_a_clock_fault_is_counted_apart(self):
        ops = timer_ops(("a", "timer", 1.0, 3.0, True))
        faults = [{"kind": "clock_jump", "start": 1.5, "end": 2.0}]
        problems, facts = cf.check_timers(ops, [timer_consume(2.5, "a")], {"a": []}, True, faults,
                                          clock_kinds=("clock_jump",), now_w=20.0)
        self.assertEqual(problems, [])
        self.assertEqual(facts["early_clock_fault"], 1)

    def test_a_lost_timer_fails_once_due(self):
        ops = timer_ops(("a", "timer", 1.0, 3.0, True), ("u", "timer", 1.0, 3.0, False))
        problems, _ = cf.check_timers(ops, [], {}, True, [], now_w=20.0)
        text = " | ".join(problems)
        self.assertIn("timer_lost: timer a", text)
        self.assertIn("never consumed", text)
        self.assertNotIn("'u'", text)
        problems, _ = cf.check_timers(ops, [], {}, False, [], now_w=3.5)
        self.assertEqual(problems, [])

    def test_a_timer_stored_under_a_forward_clock_is_lost_only_after_its_shifted_due_time(self):
        # Stored at 1.0 s while the master's clock was 30 s ahead: due 30 s later in real time.
        ops = timer_ops(("a", "delay", 1.0, 3.0, True))
        faults = [{"kind": "clock_jump", "start": 0.5, "end": 2.0, "clock": {"b0": 30}}]
        problems, facts = cf.check_timers(ops, [], {}, True, faults, clock_kinds=("clock_jump",), now_w=20.0)
        self.assertEqual(problems, [])
        self.assertEqual(facts["late_by_clock_fault"], 1)
        problems, _ = cf.check_timers(ops, [], {}, True, faults, clock_kinds=("clock_jump",), now_w=40.0)
        self.assertIn("timer_lost: delay a", " | ".join(problems))
        # A backward offset shifts nothing.
        faults[0]["clock"] = {"b0": -30}
        problems, _ = cf.check_timers(ops, [], {}, True, faults, clock_kinds=("clock_jump",), now_w=20.0)
        self.assertIn("timer_lost: delay a", " | ".join(problems))


def gsends(*acks):
    """acks: (key, broker, queue, offset, t), each invoked and acknowledged by group `broker`."""
    history = []
    for key, broker, queue, offset, t in acks:
        history.append({"type": "invoke", "key": key, "broker": broker, "queue": queue, "t": t - 0.01})
        history.append({"type": "ok", "key": key, "broker": broker, "queue": queue, "offset": offset, "t": t,
                        "addr": broker + "-m"})
    return history


def gconsume(t, broker, queue, offset, key, consumer=0):
    return dict(consume(t, queue, offset, key, consumer), broker=broker)


def group(reads, master="m", in_sync=("m", "s")):
    return {"reads": reads, "master": master, "in_sync": list(in_sync)}


class PerGroupCheckers(unittest.TestCase):
    """Two broker groups, queues keyed by (brokerName, queueId): each group's sends are checked
    against that group's final replica reads only."""

    H = gsends(("a1", "ga", 0, 0, 1.0), ("b1", "gb", 0, 0, 1.5), ("b2", "gb", 0, 1, 2.0))

    def test_both_groups_whole_pass(self):
        groups = {"ga": group({"m": {(0, 0): "a1"}, "s": {(0, 0): "a1"}}),
                  "gb": group({"m": {(0, 0): "b1", (0, 1): "b2"}, "s": {(0, 0): "b1", (0, 1): "b2"}})}
        problems, facts = checker.check_groups(self.H, groups, [], 5.0)
        self.assertEqual(problems, [])
        self.assertEqual(facts["lost_per_group"], {"ga": 0, "gb": 0})

    def test_a_message_lost_in_group_b_only_is_caught(self):
        # Queue 0 offset 1 exists in group a too (another message there would hide it if queues were
        # keyed by queueId alone); group b's master lacks b2.
        groups = {"ga": group({"m": {(0, 0): "a1", (0, 1): "b2"}, "s": {(0, 0): "a1"}}, in_sync=("m",)),
                  "gb": group({"m": {(0, 0): "b1"}, "s": {(0, 0): "b1"}}, in_sync=("m",))}
        problems, facts = checker.check_groups(self.H, groups, [], 5.0)
        self.assertIn("lost: b2", " | ".join(problems))
        self.assertEqual(facts["lost_per_group"], {"ga": 0, "gb": 1})

    def test_the_same_slot_in_two_groups_is_no_offset_reuse(self):
        groups = {"ga": group({"m": {(0, 0): "a1"}}, in_sync=("m",)),
                  "gb": group({"m": {(0, 0): "b1", (0, 1): "b2"}}, in_sync=("m",))}
        problems, _ = checker.check_groups(self.H, groups, [], 5.0)
        self.assertEqual(problems, [])
        reuse = self.H + gsends(("b3", "gb", 0, 1, 3.0))
        problems, _ = checker.check_groups(reuse, groups, [], 5.0)
        self.assertIn("offset_reuse: gb queue 0 offset 1", " | ".join(problems))

    def test_two_sends_found_nowhere_are_lost_not_an_offset_reuse(self):
        # A gRPC send found on no replica keeps queue -1 (sdk_clients.resolve): two of them at the same
        # offset of different queues share the slot.
        groups = {"ga": group({"m": {(0, 0): "a1"}}, in_sync=("m",)),
                  "gb": group({"m": {(0, 0): "b1"}}, in_sync=("m",))}
        history = self.H + gsends(("g1", "gb", -1, 7, 3.0), ("g2", "gb", -1, 7, 3.1))
        problems, _ = checker.check_groups(history, groups, [], 5.0)
        text = " | ".join(problems)
        self.assertNotIn("offset_reuse", text)
        self.assertIn("lost: g1", text)

    def test_divergence_is_per_group(self):
        groups = {"ga": group({"m": {(0, 0): "a1"}, "s": {(0, 0): "a1"}}),
                  "gb": group({"m": {(0, 0): "b1", (0, 1): "b2"}, "s": {(0, 0): "b1", (0, 1): "a1"}})}
        problems, _ = checker.check_groups(self.H, groups, [], 5.0)
        self.assertIn("divergence: gb queue 0 offset 1", " | ".join(problems))

    def test_a_consumer_missing_group_b_only_is_caught(self):
        consumes = [reset(0.5, 0, 0), dict(reset(0.5, 0, 0), broker="gb"), gconsume(1.1, "ga", 0, 0, "a1"),
                    gconsume(1.6, "gb", 0, 0, "b1")]
        consumes[0]["broker"] = "ga"
        problems, facts = run(consumes, self.H)
        self.assertIn("consume_missed: 1 acknowledged messages never consumed, first b2 (gb queue 0 offset 1",
                      problems)

    def test_a_message_consumed_from_the_other_group_is_misplaced(self):
        consumes = [gconsume(1.1, "ga", 0, 0, "a1"), gconsume(1.6, "gb", 0, 0, "b1"), gconsume(2.1, "ga", 0, 1, "b2")]
        problems, _ = run(consumes, self.H)
        self.assertIn("consume_misplaced: b2 consumed at ga queue 0 offset 1", problems)

    def test_a_second_stored_copy_of_a_key_is_a_copy_not_a_misplaced_read(self):
        # b2 acknowledged at gb queue 0 offset 1; a retried first attempt also stored it at ga queue 0
        # offset 1: consuming that copy is allowed only where a replica holds b2 at that slot.
        consumes = [gconsume(1.1, "ga", 0, 0, "a1"), gconsume(1.6, "gb", 0, 0, "b1"), gconsume(1.7, "gb", 0, 1, "b2"),
                    gconsume(2.1, "ga", 0, 1, "b2")]
        copy = {"ga": {"m": {(0, 0): "a1", (0, 1): "b2"}}}
        problems, facts = checker.check_consume(consumes, self.H, [], 10.0, True, reads=copy)
        self.assertEqual(problems, [])
        self.assertEqual(facts["consume_stored_copies"], 1)
        elsewhere = {"ga": {"m": {(0, 0): "a1", (0, 1): "a2"}}}
        problems, _ = checker.check_consume(consumes, self.H, [], 10.0, True, reads=elsewhere)
        self.assertIn("consume_misplaced: b2 consumed at ga queue 0 offset 1", " | ".join(problems))

    def test_order_is_per_group_queue(self):
        # Offsets 0, 1 of group b's queue 0 after offset 0 of group a's queue 0: no going back.
        consumes = [dict(reset(0.5, 0, 0), broker="ga"), dict(reset(0.5, 0, 0), broker="gb"),
                    gconsume(1.1, "ga", 0, 0, "a1"), gconsume(1.6, "gb", 0, 0, "b1"), gconsume(2.1, "gb", 0, 1, "b2")]
        problems, _ = run(consumes, self.H)
        self.assertEqual(problems, "")


class FailingDiskHeal(unittest.TestCase):
    """The heal of a failed CommitLog fdatasync restarts the broker (its store stays read-only until
    then) even when the broker cannot answer the question in time (a slow link on it at the heal)."""

    class Cluster:
        def __init__(self, workdir, addr):
            self.workdir = workdir
            self.broker_addrs = {"a1": addr}
            self.disk_points = {}
            self.paused = set()
            self.restarts = []

        def alive(self, name):
            return True

        def kill(self, name):
            self.restarts.append(("kill", name))

        def start(self, name):
            self.restarts.append(("start", name))

    def heal(self, log):
        import socket
        import tempfile
        import types
        import faults_disk
        with tempfile.TemporaryDirectory() as workdir, socket.socket() as silent:
            # Takes the connection (backlog) and never answers: the question times out.
            silent.bind(("127.0.0.1", 0))
            silent.listen(1)
            os.makedirs(os.path.join(workdir, "a1"))
            with open(os.path.join(workdir, "a1.log"), "w") as f:
                f.write(log)
            cluster = self.Cluster(workdir, "127.0.0.1:%d" % silent.getsockname()[1])
            fault = {"id": 22, "kind": "failing_disk", "point": "commitlog_fdatasync", "node": "a1",
                     "target": "a1(master) commitlog_fdatasync EIO"}
            faults_disk.heal(types.SimpleNamespace(cluster=cluster), fault)
            return cluster.restarts, fault["target"]

    SYNC_FAILED = ("ERROR storage::group_commit: shard 0: CommitLog fdatasync failed: I/O error; data "
                   "written since the last good sync may not be on disk, so the store takes no writes "
                   "until the broker restarts (a later sync would not prove it is)\n")

    def test_read_only_broker_that_does_not_answer_is_restarted(self):
        restarts, target = self.heal("\n===== start #1\nINFO boot success\n" + self.SYNC_FAILED)
        self.assertEqual(restarts, [("kill", "a1"), ("start", "a1")])
        self.assertTrue(target.endswith(" +restart"))

    def test_failure_before_the_last_start_is_not_restarted_again(self):
        restarts, target = self.heal("\n===== start #1\n" + self.SYNC_FAILED + "\n===== start #2\nINFO ok\n")
        self.assertEqual(restarts, [])
        self.assertFalse(target.endswith(" +restart"))


if __name__ == "__main__":
    unittest.main()
