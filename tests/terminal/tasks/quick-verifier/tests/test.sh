#!/bin/bash
mkdir -p /logs/verifier
if [ "$(timeout 2 python3 /app/fib.py 2>/dev/null)" = "2880067194370816120" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
