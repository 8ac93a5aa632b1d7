#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/total.txt 2>/dev/null)" = "199.75" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
