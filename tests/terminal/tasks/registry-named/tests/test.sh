#!/bin/bash
mkdir -p /logs/verifier
expected="$(for i in $(seq 12 -1 1); do echo "line $i of 12"; done)"
if [ -f /app/reversed.txt ] && [ "$(cat /app/reversed.txt)" = "$expected" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
