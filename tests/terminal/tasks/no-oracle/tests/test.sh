#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/digest.txt 2>/dev/null)" = "$(printf agentgym | sha256sum | cut -d" " -f1)" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
