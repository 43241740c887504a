#!/usr/bin/env python3
"""Per-node NATS users for faultline's fleet transport (docs/fleet.md "Permissions").

Reads the fleet topology file (the one `faultline fleet --topology` reads) and writes:

  OUT/auth.conf             an `authorization { users = [...] }` block for nats-server
                            (include it from nats-server.conf; see nats-server.conf.example)
  OUT/creds/<node>.cred     each agent's credentials file ("user:password", mode 0600) for
                            its [fleet] credentials_file
  OUT/creds/analyzer.cred   the analyzer's, for `faultline fleet --credentials`

Each agent may publish only its own subjects, faultline.<site>.<rack>.<node>.{obs,finding,
diagnosis,action} (tokens made NATS-safe exactly as the agent makes them), plus what its
fleet-verdict reader needs on its own durable (faultline-agent-<node>); it may subscribe only
to its own reply prefix (_INBOX.<node>.>, which the agent uses). So an agent cannot publish as
another node (the server refuses it: a permissions violation), cannot ack or read another
consumer's messages, and cannot read replies meant for others. The analyzer user may use the
JetStream API, its KV bucket and publish fleet diagnoses.

The site and rack of each node are the topology's; each agent's [fleet] site and rack must
be the same (they name its subject). Passwords are random (32 alphanumerics) and written in
plain text to auth.conf, which is made mode 0600: keep it like the server's TLS key. Running
again makes new passwords for every user (re-distribute the .cred files).

Usage: gen-nats-auth.py --topology fleet.json --out DIR [--stream FAULTLINE]
                        [--kv faultline-fleet] [--analyzer-user faultline-fleet]
"""

import argparse
import json
import os
import secrets
import string
import sys

KINDS = ("obs", "finding", "diagnosis", "action")


def subject_token(name):
    """fleet::SubjectToken: bytes <= 0x20, 0x7f, '.', '*', '>' become '_'; empty is '_'."""
    raw = name.encode("utf-8")
    if not raw:
        return "_"
    out = bytes(ord("_") if (c <= 0x20 or c == 0x7F or c in b".*>") else c for c in raw)
    return out.decode("utf-8", errors="replace")


def durable_for(node):
    """daemon::FleetLinks::DurableFor: the agent's verdict reader's durable name."""
    raw = node.encode("utf-8")
    safe = (string.ascii_letters + string.digits + "-_").encode()
    return "faultline-agent-" + "".join(chr(c) if c in safe else "_" for c in raw)


def name_of(value, where):
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        sys.exit(f"{where}: expected a string or an integer")
    return str(value)


def quote(s):
    """A double-quoted nats-server config string (backslash and quote escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def password():
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(32))


def agent_permissions(site, rack, node, stream):
    subject = f"faultline.{subject_token(site)}.{subject_token(rack)}.{subject_token(node)}"
    durable = durable_for(node)
    publish = [f"{subject}.{kind}" for kind in KINDS] + [
        # The verdict reader (daemon/fleet_links.h): bind or create its own durable, pull, ack.
        f"$JS.API.CONSUMER.INFO.{stream}.{durable}",
        f"$JS.API.CONSUMER.CREATE.{stream}.{durable}",
        f"$JS.API.CONSUMER.CREATE.{stream}.{durable}.>",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
    ]
    return publish, [f"_INBOX.{subject_token(node)}.>"]


def analyzer_permissions(stream, kv):
    publish = [
        "$JS.API.>",  # stream and consumer management, KV reads, the restart replay
        f"$JS.ACK.{stream}.>",
        "$JS.FC.>",  # flow control of the ordered consumer that lists KV keys
        f"$KV.{kv}.>",
        "faultline.*.fleet.fleet.fleet",  # fleet diagnoses
    ]
    return publish, ["_INBOX.>"]


def user_entry(user, secret, publish, subscribe):
    pub = ", ".join(quote(s) for s in publish)
    sub = ", ".join(quote(s) for s in subscribe)
    return (f"    {{user: {quote(user)}, password: {quote(secret)},\n"
            f"     permissions: {{publish: {{allow: [{pub}]}}, subscribe: {{allow: [{sub}]}}}}}}")


def write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def load_nodes(path):
    with open(path, encoding="utf-8") as f:
        topo = json.load(f)
    site = name_of(topo.get("site", "default"), "site")
    nodes = []
    for i, n in enumerate(topo.get("nodes", [])):
        name = name_of(n.get("name"), f"nodes[{i}].name")
        rack = n.get("rack")
        if rack is None or str(rack) == "":
            sys.exit(f"nodes[{i}] ({name}): no rack; give it the rack of its agent's [fleet] section")
        node_site = name_of(n.get("site") or site, f"nodes[{i}].site")
        nodes.append((node_site, name_of(rack, f"nodes[{i}].rack"), name))
    return nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stream", default="FAULTLINE")
    ap.add_argument("--kv", default="faultline-fleet")
    ap.add_argument("--analyzer-user", default="faultline-fleet")
    args = ap.parse_args()

    nodes = load_nodes(args.topology)
    users = set()
    entries = []
    creds = {}
    for site, rack, node in nodes:
        user = subject_token(node)
        if user in users or user == args.analyzer_user:
            sys.exit(f"node {node}: user name {user} is taken (node names must stay distinct once made NATS-safe)")
        users.add(user)
        secret = password()
        entries.append(user_entry(user, secret, *agent_permissions(site, rack, node, args.stream)))
        creds[user] = f"{user}:{secret}\n"
    secret = password()
    entries.append(user_entry(args.analyzer_user, secret, *analyzer_permissions(args.stream, args.kv)))
    creds["analyzer"] = f"{args.analyzer_user}:{secret}\n"

    os.makedirs(os.path.join(args.out, "creds"), mode=0o700, exist_ok=True)
    header = "# Generated by deploy/nats/gen-nats-auth.py from " + os.path.basename(args.topology) + "; do not edit.\n"
    write_private(os.path.join(args.out, "auth.conf"),
                  header + "authorization {\n  users = [\n" + ",\n".join(entries) + "\n  ]\n}\n")
    for name, text in creds.items():
        write_private(os.path.join(args.out, "creds", name + ".cred"), text)
    print(f"{len(nodes)} agent users and 1 analyzer user written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
