#!/usr/bin/env python3
"""Reads `go test -json` output, one file per lane of the e2e run, and
prints what a person needs from it: each package's result per lane, the
whole output of every test that failed (and of a package that failed
outside any test), and the ten slowest top-level tests. Exits 0; the test
command keeps go test's own exit status."""
import json
import sys

outputs = {}   # (package, test) -> [lines]
results = {}   # (package, test) -> (action, elapsed)
packages = []  # (lane, package, action, elapsed, output outside any test)
for lane, path in enumerate(sys.argv[1:], start=1):
    lane_outputs = {}  # package -> [lines outside any test]
    for line in open(path, encoding="utf-8", errors="replace"):
        try:
            ev = json.loads(line)
        except ValueError:
            print(line, end="")  # not an event: the go command's own words
            continue
        pkg, test, action = ev.get("Package", ""), ev.get("Test", ""), ev.get("Action")
        if action == "output":
            where = outputs.setdefault((pkg, test), []) if test else lane_outputs.setdefault(pkg, [])
            where.append(ev.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            if test:
                results[(pkg, test)] = (action, ev.get("Elapsed", 0.0))
            else:
                packages.append((lane, pkg, action, ev.get("Elapsed", 0.0), lane_outputs.get(pkg, [])))

for (pkg, test), (action, _) in sorted(results.items()):
    if action == "fail" and "/" not in test:
        print(f"--- FAIL: {test} ({pkg})")
        print("".join(outputs.get((pkg, test), [])), end="")
        for (p, t), lines in sorted(outputs.items()):
            if p == pkg and t.startswith(test + "/"):
                print("".join(lines), end="")
failed_tests = {p for (p, _), (a, _) in results.items() if a == "fail"}
for lane, pkg, action, elapsed, lines in packages:
    if action == "fail" and pkg not in failed_tests:
        print("".join(lines), end="")
    print(f"{'ok  ' if action == 'pass' else 'FAIL'}\t{pkg}\t{elapsed:.1f}s\t(lane {lane})")

top = sorted(((e, t, p) for (p, t), (a, e) in results.items() if "/" not in t), reverse=True)[:10]
if top:
    print("== the ten slowest tests")
    for elapsed, test, pkg in top:
        print(f"{elapsed:8.1f}s  {test}  ({pkg.rsplit('/', 1)[-1]})")

counts = {"pass": 0, "fail": 0, "skip": 0}
for (p, t), (a, _) in results.items():
    if "/" not in t:
        counts[a] += 1
print(f"e2e: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
