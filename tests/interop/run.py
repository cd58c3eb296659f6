"""Interop test runner: real RocketMQ clients (Python C++ client, Java client, Rust client) against our namesrv
+ broker.

    tests/interop/.venv/bin/python tests/interop/run.py [-k NAME ...] [--list] [--keep]

Each case starts its own name server and broker on free loopback ports with a fresh temp store, runs
with a hard timeout, and stops every process it started (also on failure and ctrl-c). Prints PASS/FAIL per
case with the reason (and the broker/name-server log tails on failure); exits 1 if any case failed.
INTEROP_IMPL=rocketmq-rust runs the same cases against rocketmq-rust's binaries (development scaffold only).
"""

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import caselib  # noqa: E402
import cases_python  # noqa: E402,F401  (registers cases)
import cases_rust  # noqa: E402,F401
import cases_cross  # noqa: E402,F401
import cases_ha  # noqa: E402,F401
import cases_delay  # noqa: E402,F401
import cases_tx  # noqa: E402,F401
import cases_order_query  # noqa: E402,F401
import cases_acl  # noqa: E402,F401
import cases_cluster  # noqa: E402,F401
import cases_adminstats  # noqa: E402,F401
import cases_java  # noqa: E402,F401
import cases_failover  # noqa: E402,F401
import cases_go  # noqa: E402,F401
import cases_slave_read  # noqa: E402,F401
import cases_compaction  # noqa: E402,F401
import cases_acl2  # noqa: E402,F401
import cases_tls  # noqa: E402,F401
import cases_migration  # noqa: E402,F401
import cases_migration_ha  # noqa: E402,F401
import cases_trace  # noqa: E402,F401
import cases_recall  # noqa: E402,F401
import harness  # noqa: E402


def _on_alarm(signum, frame):
    raise harness.CaseTimeout()


def run_case(case, keep):
    workdir = tempfile.mkdtemp(prefix="interop-%s-" % case.name)
    ctx = caselib.Context(case.name, workdir)
    started = time.monotonic()
    failure = None
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, case.timeout)
    try:
        case.func(ctx)
    except harness.CaseTimeout:
        failure = "hard timeout of %ss reached" % case.timeout
    except harness.CaseFailure as err:
        failure = str(err)
    except Exception:  # a bug in the case or a harness error is a failure too, with its traceback
        failure = "error: %s" % traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    logs = ctx.failure_logs() if failure else ""
    ctx.cleanup()
    harness.stop_everything()
    elapsed = time.monotonic() - started
    if failure:
        print("FAIL %s (%.1fs): %s" % (case.name, elapsed, failure))
        for note in ctx.notes:
            print("     note: %s" % note)
        print("     logs and client output kept in %s" % workdir)
        print("\n".join("     | " + line for line in logs.splitlines()))
    else:
        print("PASS %s (%.1fs)" % (case.name, elapsed))
        for note in ctx.notes:
            print("     note: %s" % note)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()
    return failure is None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", action="append", default=[], metavar="NAME",
                        help="run only cases whose name contains NAME (repeatable)")
    parser.add_argument("--list", action="store_true", help="list case names and exit")
    parser.add_argument("--keep", action="store_true", help="keep temp dirs of passing cases too")
    args = parser.parse_args()
    selected = [c for c in caselib.CASES if not args.k or any(k in c.name for k in args.k)]
    if args.list:
        print("\n".join(c.name for c in selected))
        return 0
    if not selected:
        print("no case matches %s" % args.k)
        return 1
    print("interop: %d case(s) against %s (%s)" % (len(selected), os.environ.get("INTEROP_IMPL", "ours"),
                                                 " ".join(harness.binaries())))
    signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
    started = time.monotonic()
    failed = []
    try:
        for case in selected:
            if not run_case(case, args.keep):
                failed.append(case.name)
    except KeyboardInterrupt:
        harness.stop_everything()
        print("interrupted; every started process stopped")
        return 130
    total = time.monotonic() - started
    print("interop: %d passed, %d failed in %.0fs%s" % (len(selected) - len(failed), len(failed), total,
                                                         (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
