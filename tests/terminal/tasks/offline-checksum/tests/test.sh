#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/blob.md5 2>/dev/null)" = "a65f0d07e9433b3a81bfd0b4e172881b  /app/blob.bin" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
