"""A recovery worker of the power-loss simulator.

Reads requests, one JSON object a line, from stdin: {"workload", "state",
"work"}; recovers the materialized crash state `state` with gulpdb (through
the workload's check) and answers one JSON line on stdout. A worker killed
by a signal is a finding of the runner (run_powerloss.py), which starts a new
one.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workloads  # noqa: E402


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing else may write to the answer channel
    for line in sys.stdin:
        req = json.loads(line)
        os.environ["GULPDB_PL_WORK"] = req["work"]
        try:
            result = workloads.WORKLOADS[req["workload"]].check(req["state"])
        except Exception as e:  # noqa: BLE001 - reported, never fatal
            result = {"view": "error", "problems": [f"check raised {type(e).__name__}: {e}"]}
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
