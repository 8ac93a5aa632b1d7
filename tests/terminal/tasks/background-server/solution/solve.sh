#!/bin/bash
# setsid + nohup: the server outlives this script and the shell that ran it.
setsid nohup python3 -m http.server 8080 --bind 127.0.0.1 --directory /srv/www >/tmp/http.log 2>&1 < /dev/null &
for _ in $(seq 50); do
    python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8080), 1)' 2>/dev/null && exit 0
    sleep 0.2
done
echo "the server did not come up" >&2
exit 1
