#!/usr/bin/env python3
"""Every infervisor_* series that a shipped file queries (Grafana dashboard
JSON, Prometheus rules) must be one the daemon exposes: the names in the
TYPE lines of metrics-example's output. Also checks that the dashboard is
valid JSON with panels and annotations, and that every infervisor_* series
its queries (panel targets, annotations, the worker variable) select is
filtered by the host variable (host=~"$host"), so that picking hosts
narrows every panel.

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
        exprs = [a["expr"] for a in dash["annotations"]["list"]]
        exprs += [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
        exprs += [v["definition"] for v in dash["templating"]["list"] if v["name"] == "worker"]
        assert len(exprs) > len(dash["annotations"]["list"]), path + ": no panel queries"
        for expr in exprs:
            for name, selector in re.findall(r"\b(infervisor_[a-z0-9_]+)(\{[^}]*\})?", expr):
                if 'host=~"$host"' not in selector:
                    bad.append(f"{path}: {name} in {expr!r} is not filtered by host=~\"$host\"")
    for name in sorted(set(re.findall(r"\binfervisor_[a-z0-9_]+", text))):
        if name not in exposed:
            bad.append(f"{path}: {name} is not a series infervisord exposes")
print("\n".join(bad) or f"all infervisor_* names in {len(sys.argv) - 2} file(s) are exposed")
sys.exit(1 if bad else 0)
