#!/bin/bash
# The page must be what the server served: saved in /app, and the GET in the server's own log.
mkdir -p /logs/verifier
if cmp -s /app/fetched.html /tests/index.html && grep -q '"GET /index.html HTTP' /tmp/http.log 2>/dev/null; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
