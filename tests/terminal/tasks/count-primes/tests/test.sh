#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/primes.txt 2>/dev/null)" = "78498" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
