#!/usr/bin/env python3
"""Extracts Apache RocketMQ's config keys (the private, non-static, non-final fields of its config
classes, parents included) from a git checkout of apache/rocketmq into plain-text lists, one key a
line, each headed by the Apache version and commit they came from.

Usage: scripts/apache-config-keys.py APACHE_GIT_DIR [REPO_ROOT]

APACHE_GIT_DIR is a clone (bare or not) of github.com/apache/rocketmq; the files are read at its
HEAD with `git show`, so no work tree is needed. The lists are what `MixAll.properties2Object`
fills from a `-c` properties file: each server reads several classes from the one file.
"""

import os
import re
import subprocess
import sys

COMMON = "common/src/main/java/org/apache/rocketmq/common/"
REMOTING = "remoting/src/main/java/org/apache/rocketmq/remoting/netty/"
CLASSES = {
    "BrokerConfig": COMMON + "BrokerConfig.java",
    "BrokerIdentity": COMMON + "BrokerIdentity.java",
    "MessageStoreConfig": "store/src/main/java/org/apache/rocketmq/store/config/MessageStoreConfig.java",
    "NettyServerConfig": REMOTING + "NettyServerConfig.java",
    "NettyClientConfig": REMOTING + "NettyClientConfig.java",
    "NamesrvConfig": COMMON + "namesrv/NamesrvConfig.java",
    "ControllerConfig": COMMON + "ControllerConfig.java",
    "JraftConfig": COMMON + "JraftConfig.java",
    "AuthConfig": "auth/src/main/java/org/apache/rocketmq/auth/config/AuthConfig.java",
}

# Which classes each server reads from its -c file (BrokerStartup, NamesrvStartup, ControllerStartup).
OUTPUTS = {
    "broker/src/config/apache_keys": [
        "BrokerConfig", "MessageStoreConfig", "NettyServerConfig", "NettyClientConfig", "AuthConfig",
    ],
    "namesrv/src/apache_keys": ["NamesrvConfig", "NettyServerConfig", "NettyClientConfig"],
    "controller/src/apache_keys": [
        "ControllerConfig", "JraftConfig", "NettyServerConfig", "NettyClientConfig",
    ],
}

FIELD = re.compile(
    r"^\s*private\s+((?:(?:volatile|transient|final)\s+)*)"
    r"[\w.<>\[\], ?]+?\s+(\w+)\s*(?:=[^;]*)?;",
    re.MULTILINE | re.DOTALL,
)
EXTENDS = re.compile(r"\bclass\s+(\w+)\s+extends\s+(\w+)")


def git(git_dir, *args):
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def strip_comments(java):
    java = re.sub(r"/\*.*?\*/", "", java, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", java)


def top_level(java):
    """The class body at brace depth 1 only: nested classes' fields are not keys of this class."""
    out, depth = [], 0
    for ch in java:
        if ch == "{":
            depth += 1
            if depth == 2:
                out.append(";")
            continue
        if ch == "}":
            depth -= 1
            continue
        if depth == 1:
            out.append(ch)
    return "".join(out)


def fields(git_dir, name):
    java = strip_comments(git(git_dir, "show", "HEAD:" + CLASSES[name]))
    keys = []
    parent = EXTENDS.search(java)
    if parent and parent.group(1) == name and parent.group(2) in CLASSES:
        keys += fields(git_dir, parent.group(2))
    for m in FIELD.finditer(top_level(java)):
        modifiers, key = m.group(1), m.group(2)
        if "static" in m.group(0).split("=")[0] or "final" in modifiers:
            continue
        keys.append(key)
    return keys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    git_dir = sys.argv[1]
    if os.path.isdir(os.path.join(git_dir, ".git")):
        git_dir = os.path.join(git_dir, ".git")
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = git(git_dir, "rev-parse", "HEAD").strip()
    date = git(git_dir, "log", "-1", "--format=%cs").strip()
    pom = git(git_dir, "show", "HEAD:pom.xml")
    version = re.search(r"<revision>([^<]+)</revision>", pom)
    version = version.group(1) if version else "unknown"
    described = subprocess.run(
        ["git", "--git-dir", git_dir, "describe", "--tags", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    for folder, names in OUTPUTS.items():
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        for name in names:
            keys = fields(git_dir, name)
            source = CLASSES[name]
            parent = " and its parent BrokerIdentity" if name == "BrokerConfig" else ""
            header = (
                f"# Apache RocketMQ {version} ({described or 'untagged'}, commit {commit}, {date}): "
                f"the private non-static fields of {source}{parent}\n"
            )
            with open(os.path.join(root, folder, name + ".txt"), "w") as out:
                out.write(header)
                out.write("".join(k + "\n" for k in keys))
            print(f"{folder}/{name}.txt: {len(keys)} keys")


if __name__ == "__main__":
    main()
