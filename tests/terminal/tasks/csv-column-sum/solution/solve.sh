#!/bin/bash
python3 - <<'EOF'
import csv
with open("/app/sales.csv", newline="") as f:
    total = sum(float(row["amount"]) for row in csv.DictReader(f))
with open("/app/total.txt", "w") as out:
    out.write(f"{total:.2f}\n")
EOF
