#!/bin/bash
mkdir -p /logs/verifier
expected="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$(cat /tmp/python-version.txt 2>/dev/null)" = "$expected" ]; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
