"""Interop test runner: real RocketMQ clients (Python C++ client, Java client, Rust client) against our namesrv
+ broker.

    tests/interop/.venv/bin/python tests/interop/run.py [-k NAME ...] [-j N] [--list] [--keep]

`-j N` runs up to N cases at once, each in a child process with its own slice of the port range
(parallel.py); each case's lines are printed together when it ends. Cases marked exclusive
(caselib.EXCLUSIVE, or `@case(..., exclusive=True)`) run alone, after the others. Each case starts its own name server and broker on free loopback ports with a fresh temp store, runs
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
import cases_migration_import  # noqa: E402,F401
import cases_migration_back  # noqa: E402,F401
import cases_trace  # noqa: E402,F401
import cases_recall  # noqa: E402,F401
import harness  # noqa: E402
import parallel  # noqa: E402


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


def run_one(name, keep):
    """`--run-one NAME`: the one case named exactly NAME, as a child of `-j N`; exit status 0 if it passed."""
    cases = [c for c in caselib.CASES if c.name == name]
    if not cases:
        print("FAIL %s: no such case" % name)
        return 1
    signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return 0 if run_case(cases[0], keep) else 1
    except KeyboardInterrupt:
        harness.stop_everything()
        print("INTERRUPTED %s: every started process stopped" % name)
        return 130


def run_jobs(selected, jobs, keep, failed):
    """The non-exclusive cases `jobs` at a time in child processes, then the exclusive ones alone (here)."""
    shared = [c.name for c in selected if not caselib.is_exclusive(c)]
    alone = [c for c in selected if caselib.is_exclusive(c)]
    argv = [sys.executable, os.path.abspath(__file__)] + (["--keep"] if keep else [])

    def done(name, code):
        if code != 0:
            failed.append(name)
    started = time.monotonic()
    parallel.run_all(shared, jobs, lambda name: argv + ["--run-one", name], done)
    if alone:
        print("interop: %d exclusive case(s), one at a time (the %d others took %.0fs, %d at a time)"
              % (len(alone), len(shared), time.monotonic() - started, jobs))
    for case in alone:
        if not run_case(case, keep):
            failed.append(case.name)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", action="append", default=[], metavar="NAME",
                        help="run only cases whose name contains NAME (repeatable)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="run up to N cases at once (exclusive ones alone, after the others); default 1")
    parser.add_argument("--list", action="store_true", help="list case names and exit")
    parser.add_argument("--keep", action="store_true", help="keep temp dirs of passing cases too")
    parser.add_argument("--run-one", metavar="NAME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        return run_one(args.run_one, args.keep)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    selected = [c for c in caselib.CASES if not args.k or any(k in c.name for k in args.k)]
    if args.list:
        print("\n".join(c.name + (" (exclusive)" if caselib.is_exclusive(c) else "") for c in selected))
        return 0
    if not selected:
        print("no case matches %s" % args.k)
        return 1
    print("interop: %d case(s) against %s (%s)%s" % (
        len(selected), os.environ.get("INTEROP_IMPL", "ours"), " ".join(harness.binaries()),
        ", %d at a time" % args.jobs if args.jobs > 1 else ""))
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
    started = time.monotonic()
    failed = []
    try:
        if args.jobs > 1:
            run_jobs(selected, args.jobs, args.keep, failed)
        else:
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
