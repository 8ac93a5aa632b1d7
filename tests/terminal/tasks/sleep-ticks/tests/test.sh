#!/bin/bash
mkdir -p /logs/verifier
python3 - <<'EOF'
import os


def good():
    try:
        ticks = [float(line) for line in open("/app/ticks.txt").read().split()]
        modified = os.stat("/app/ticks.txt").st_mtime
    except (OSError, ValueError):
        return False
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    return len(ticks) == 5 and all(gap >= 1.0 for gap in gaps) and ticks[-1] <= modified + 1

open("/logs/verifier/reward.txt", "w").write("1\n" if good() else "0\n")
EOF
