#!/bin/bash
# A long-running command: the server runs in the background while the rest of the episode uses it.
setsid nohup python3 -m http.server 8080 --bind 127.0.0.1 --directory /srv/www >/tmp/http.log 2>&1 < /dev/null &
for _ in $(seq 50); do
    python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8080), 1)' 2>/dev/null && break
    sleep 0.2
done
python3 -c 'import urllib.request; open("/app/fetched.html", "wb").write(urllib.request.urlopen("http://127.0.0.1:8080/index.html", timeout=5).read())'
