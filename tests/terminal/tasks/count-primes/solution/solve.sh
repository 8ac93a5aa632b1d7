#!/bin/bash
python3 - <<'EOF'
n = 1_000_000
sieve = bytearray([1]) * n
sieve[0:2] = b"\0\0"
for i in range(2, int(n**0.5) + 1):
    if sieve[i]:
        sieve[i * i :: i] = bytes(len(range(i * i, n, i)))
open("/app/primes.txt", "w").write(f"{sum(sieve)}\n")
EOF
