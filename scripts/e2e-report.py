#!/usr/bin/env python3
"""Reads `go test -json` output and prints what a person needs from it:
each package's result, the whole output of every test that failed (and of a
package that failed outside any test), and the ten slowest top-level tests.
Exits 0; the test command keeps go test's own exit status."""
import json
import sys

outputs = {}   # (package, test or "") -> [lines]
results = {}   # (package, test or "") -> (action, elapsed)
order = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        ev = json.loads(line)
    except ValueError:
        print(line, end="")  # not an event: the go command's own words
        continue
    key = (ev.get("Package", ""), ev.get("Test", ""))
    action = ev.get("Action")
    if action == "output":
        outputs.setdefault(key, []).append(ev.get("Output", ""))
    elif action in ("pass", "fail", "skip"):
        results[key] = (action, ev.get("Elapsed", 0.0))
        if key[1] == "":
            order.append(key[0])

for (pkg, test), (action, _) in sorted(results.items()):
    if action == "fail" and test and "/" not in test:
        print(f"--- FAIL: {test} ({pkg})")
        print("".join(outputs.get((pkg, test), [])), end="")
        for (p, t), lines in sorted(outputs.items()):
            if p == pkg and t.startswith(test + "/"):
                print("".join(lines), end="")
for pkg in order:
    action, elapsed = results[(pkg, "")]
    if action == "fail" and not any(a == "fail" and p == pkg and t for (p, t), (a, _) in results.items()):
        print("".join(outputs.get((pkg, ""), [])), end="")
    print(f"{'ok  ' if action == 'pass' else 'FAIL'}\t{pkg}\t{elapsed:.1f}s")

top = sorted(((e, t, p) for (p, t), (a, e) in results.items() if t and "/" not in t), reverse=True)[:10]
if top:
    print("== the ten slowest tests")
    for elapsed, test, pkg in top:
        print(f"{elapsed:8.1f}s  {test}  ({pkg.rsplit('/', 1)[-1]})")

counts = {"pass": 0, "fail": 0, "skip": 0}
for (p, t), (a, _) in results.items():
    if t and "/" not in t:
        counts[a] += 1
print(f"e2e: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
