#!/bin/bash
mkdir -p /logs/verifier
if python3 /tests/check_sorted.py /tests/expected.txt /app/sorted.txt; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
