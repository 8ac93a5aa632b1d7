#!/bin/bash
mkdir -p /logs/verifier
if python3 -c 'import sys; sys.exit(open("/app/hello.txt", "rb").read() != b"Hello, world!\n")' 2>/dev/null; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
