"""The messages every interop client sends: message i of a run with prefix P, so senders and checkers agree.

The Rust client program (rust-client/src/main.rs) and the Go one (go-client/main.go) build the same fields; keep
them in step.
"""


# Runs whose prefix starts with "big" carry this much padding: bodies over several 4 KiB blocks (and over the
# clients' 4 KiB compression threshold), under the C++ client's 128 KiB default limit.
BIG_PAD = 100 * 1024


def body(prefix, i):
    # Varying length and some non-ASCII UTF-8, so framing and body CRCs are really exercised.
    text = "%s-body-%d-%s%s" % (prefix, i, "\u00e9" * (i % 5), "x" * (i % 23))
    if prefix.startswith("big"):
        text += "y" * (BIG_PAD + i)
    return text


def tags(i):
    return "Tag%d" % (i % 3)


def keys(prefix, i):
    return "%s-key-%d" % (prefix, i)


def user_properties(prefix, i):
    return {"seq": str(i), "origin": prefix}


def sharding_key(i):
    """The ordering key of message i for orderly / selector sends."""
    return i % 3


def expected(prefix, i):
    return {"body": body(prefix, i), "tags": tags(i), "keys": keys(prefix, i), "props": user_properties(prefix, i)}
