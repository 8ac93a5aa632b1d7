#!/bin/bash
mkdir -p /logs/verifier
python3 - <<'EOF'
import json

try:
    with open("/app/stats.json") as f:
        stats = json.load(f)
except (OSError, ValueError):
    stats = {}
if not isinstance(stats, dict):
    stats = {}
rewards = {"lines": float(stats.get("lines") == 5), "words": float(stats.get("words") == 25)}
with open("/logs/verifier/reward.json", "w") as f:
    json.dump(rewards, f)
EOF
