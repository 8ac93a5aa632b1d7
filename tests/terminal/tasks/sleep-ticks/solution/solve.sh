#!/bin/bash
for i in 1 2 3 4 5; do
    python3 -c 'import time; print(f"{time.time():.3f}")' >> /app/ticks.txt
    [ "$i" -lt 5 ] && sleep 1.1
done
exit 0
