"""Interop case mixing clients: what one client library sent, the other decodes with every field intact."""

from caselib import case, check, check_received, require_sent


@case("cross_python_and_rust_clients", timeout=180)
def python_and_rust(ctx):
    c = ctx.start_cluster()
    c.create_topic("Mixed")
    py = ctx.clients.run("py", "py-produce-mixed", ["produce", "--topic", "Mixed", "--prefix", "pyx", "--count", "30"], 90)
    require_sent(py, "pyx", 30)
    rs = ctx.clients.run("rust", "rs-produce-mixed", ["send", "--topic", "Mixed", "--prefix", "rsx", "--count", "30"], 90)
    require_sent(rs, "rsx", 30, statuses=("SendOk",))
    want = {"pyx": 30, "rsx": 30}
    rs_recv = ctx.clients.run("rust", "rs-consume-mixed", ["consume", "--topic", "Mixed", "--group", "rs-mixed",
                                                          "--expect", "pyx:30", "--expect", "rsx:30"], 100)
    check_received(ctx, rs_recv, want, what="Rust push consumer")
    check(rs_recv.code == 0, "Rust push consumer did not finish: %s" % rs_recv.describe())
    py_recv = ctx.clients.run("py", "py-push-mixed", ["push", "--topic", "Mixed", "--group", "py-mixed", "--linger", "1",
                                                      "--expect", "pyx:30", "--expect", "rsx:30"], 100)
    check_received(ctx, py_recv, want, what="C++ PushConsumer")
    check(py_recv.code == 0, "C++ PushConsumer did not finish: %s" % py_recv.describe())
