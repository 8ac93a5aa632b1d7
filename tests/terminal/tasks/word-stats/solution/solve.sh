#!/bin/bash
python3 - <<'EOF'
import json

text = open("/app/poem.txt").read()
json.dump({"lines": len(text.splitlines()), "words": len(text.split())}, open("/app/stats.json", "w"))
EOF
