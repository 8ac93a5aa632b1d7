#!/bin/bash
cat > /app/fib.py <<'EOF'
a, b = 0, 1
for _ in range(90):
    a, b = b, a + b
print(a)
EOF
