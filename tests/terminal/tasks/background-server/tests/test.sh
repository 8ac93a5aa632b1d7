#!/bin/bash
mkdir -p /logs/verifier
python3 - <<'EOF'
import urllib.request

try:
    with urllib.request.urlopen("http://127.0.0.1:8080/index.html", timeout=5) as response:
        served = response.read()
except OSError:
    served = b""
reward = int(served == open("/tests/index.html", "rb").read())
open("/logs/verifier/reward.txt", "w").write(f"{reward}\n")
EOF
