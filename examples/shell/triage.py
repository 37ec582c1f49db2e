#!/usr/bin/env python3
"""Route a request to a skill, then have a model draft a first reply for it.

    python3 examples/shell/triage.py [--server URL] "the app crashes when I click save"

Calls the switchboard CLI with subprocess. With --server (or SWITCHBOARD_SERVER in the environment)
a running `switchboard serve` answers, warm; when it does not answer, switchboard runs in process.
"""

import argparse
import json
import os
import subprocess
import sys

ROUTED, ABSTAINED = 0, 10
TRY_LATER = {20, 21, 23, 24}  # rate limited, overloaded, timeout, idle timeout
AUTH = 22


def switchboard(server, *args):
    command = ["switchboard", *args] + (["--server", server] if server else [])
    return subprocess.run(command, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", help="a running switchboard serve, e.g. http://127.0.0.1:8787")
    parser.add_argument("request")
    arguments = parser.parse_args()

    routed = switchboard(arguments.server, "route", "--print", "skill", arguments.request)
    if routed.returncode == ABSTAINED:
        print("no skill fits; leaving it to a human", file=sys.stderr)
        return ABSTAINED
    if routed.returncode != ROUTED:
        sys.stderr.write(routed.stderr)  # one line: what went wrong and what to do
        return routed.returncode
    skill = routed.stdout.strip()

    spec = os.environ.get("SWITCHBOARD_SPEC", "claude:haiku")
    prompt = f"Draft a one-line first reply to this {skill} request: {arguments.request}"
    called = switchboard(arguments.server, "call", spec, prompt, "--json")
    if called.returncode in TRY_LATER:
        print("rate limited, overloaded or timed out: try again later", file=sys.stderr)
        return 75
    if called.returncode == AUTH:
        print("the provider refused the credentials: check ANTHROPIC_API_KEY", file=sys.stderr)
        return 77
    if called.returncode != 0:
        sys.stderr.write(called.stderr)
        return called.returncode
    result = json.loads(called.stdout)
    print(f"{skill}\t{result['text']}\t{result['provider']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
