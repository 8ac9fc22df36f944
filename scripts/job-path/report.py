"""Summarise path.py's stops: files on the path, file switches, calls per file."""
import json
import sys

stops = json.load(open(sys.argv[1]))["stops"]
files = sorted({s[0] for s in stops})
switches = sum(1 for a, b in zip(stops, stops[1:]) if a[0] != b[0])
# A call: a stop one frame deeper than the previous stop.
calls = {}
for a, b in zip(stops, stops[1:]):
    if b[2] > a[2]:
        calls[b[0]] = calls.get(b[0], 0) + 1
print(f"core files on the path: {len(files)}")
print(f"  {' '.join(files)}")
print(f"line stops in the core: {len(stops)}; consecutive stops in different files: {switches}")
print("calls into each file (debug build: every function a call):")
for f, n in sorted(calls.items(), key=lambda x: (-x[1], x[0])):
    print(f"  {f:22} {n}")
