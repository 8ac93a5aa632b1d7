#!/bin/bash
python3 - <<'EOF'
seen = {}
for name in open("/app/names.txt").read().split():
    seen.setdefault(name.lower(), name)
open("/app/sorted.txt", "w").write("".join(seen[key] + "\n" for key in sorted(seen)))
EOF
