"""Runs test cases side by side for a runner's `-j N` (tests/interop/run.py, tests/sdk5/run.py).

Each case runs in a child process (the runner itself with `--run-one NAME`), so its processes, signals,
hard timeout and cleanup stay its own. Child i of the N running at once gets slice i of the port range
(harness.PORT_RANGE_ENV), so two cases never pick the same port. A child's output goes to a temp file and
is printed in one piece when it ends; its exit status is the case's result (0: passed).
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

import harness

# How long children get to stop their processes after SIGTERM (ctrl-c, or the runner's own SIGTERM) before
# SIGKILL.
STOP_GRACE_S = 30


def run_all(names, jobs, argv_of, on_done):
    """Run `argv_of(name)` for every name, at most `jobs` at once, in order of `names`; call
    `on_done(name, exit_code)` after printing each one's output (and a FAIL line when a child exited
    non-zero without one). On KeyboardInterrupt every running child
    gets SIGTERM (then SIGKILL after STOP_GRACE_S) and the interrupt is raised again."""
    slices = harness.port_slices(jobs)
    free_slots = list(range(jobs))
    pending = list(names)
    running = {}
    try:
        while pending or running:
            while pending and free_slots:
                name = pending.pop(0)
                slot = free_slots.pop(0)
                out = tempfile.TemporaryFile()
                env = dict(os.environ, **{harness.PORT_RANGE_ENV: slices[slot]})
                proc = subprocess.Popen(argv_of(name), stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env)
                running[proc] = (name, slot, out)
            time.sleep(0.2)
            for proc in [p for p in running if p.poll() is not None]:
                name, slot, out = running.pop(proc)
                free_slots.append(slot)
                text = _print_output(out)
                if proc.returncode != 0 and "FAIL %s " % name not in text and "FAIL %s:" % name not in text:
                    # Killed, or a crash before the case could say why: still a failure, with its exit code.
                    print("FAIL %s: its process exited with code %s before reporting" % (name, proc.returncode))
                    sys.stdout.flush()
                on_done(name, proc.returncode)
    except KeyboardInterrupt:
        _stop(running)
        raise


def _print_output(out):
    out.seek(0)
    text = out.read().decode("utf-8", "replace")
    out.close()
    sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")
    sys.stdout.flush()
    return text


def _stop(running):
    for proc in running:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    end = time.monotonic() + STOP_GRACE_S
    for proc, (name, _, out) in running.items():
        try:
            proc.wait(max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _print_output(out)
