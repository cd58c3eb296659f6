#!/usr/bin/env python3
"""The consume checkers on small made-up histories: each failure they exist for is caught, and what
RocketMQ allows (duplicates after a rebalance, a read of a message never acknowledged) is not.
No root, no cluster: `python3 tests/chaos/test_checker.py`.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
