#!/usr/bin/env python3
"""Every infervisor_* series that a shipped file queries (Grafana dashboard
JSON, Prometheus rules) must be one the daemon exposes: the names in the
TYPE lines of metrics-example's output. Also checks that the dashboard is
valid JSON with panels and annotations.

usage: check-metric-names.py METRICS_EXAMPLE FILE...
"""
import json
import re
import subprocess
import sys

exposed = set(re.findall(r"^# TYPE (\S+) ", subprocess.run(
    [sys.argv[1]], check=True, capture_output=True, text=True).stdout, re.M))
bad = []
for path in sys.argv[2:]:
    text = open(path, encoding="utf-8").read()
    if path.endswith(".json"):
        dash = json.loads(text)  # raises on invalid JSON
        assert dash["panels"] and dash["annotations"]["list"], path + ": no panels or annotations"
    for name in sorted(set(re.findall(r"\binfervisor_[a-z0-9_]+", text))):
        if name not in exposed:
            bad.append(f"{path}: {name} is not a series infervisord exposes")
print("\n".join(bad) or f"all infervisor_* names in {len(sys.argv) - 2} file(s) are exposed")
sys.exit(1 if bad else 0)
