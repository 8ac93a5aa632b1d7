#!/bin/bash
mkdir -p /logs/verifier
# EXPECTED_GREETING comes from [verifier.env]; an unset one must fail, not match an empty file.
if [ -n "${EXPECTED_GREETING:-}" ] && [ "$(cat /app/greeting.txt 2>/dev/null)" = "$EXPECTED_GREETING" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
