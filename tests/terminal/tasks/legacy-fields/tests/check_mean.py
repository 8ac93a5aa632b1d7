"""Exit 0 when calc.ops.mean is right on a few lists."""
import sys

sys.path.insert(0, "/app")
try:
    from calc.ops import mean
    ok = all(abs(mean(values) - expected) < 1e-9
             for values, expected in [([1, 2, 3], 2.0), ([5], 5.0), ([-1, 1, 4, 4], 2.0)])
except Exception:
    ok = False
sys.exit(0 if ok else 1)
