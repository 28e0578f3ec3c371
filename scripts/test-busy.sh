#!/usr/bin/env bash
# Runs the test command (or the command given) with a CPU hog at the
# lowest priority on every core, as a shared CI runner is busy: the tests
# still get most of the CPU, but their timing spreads. The hogs stop when
# the command does, however it ends.
#   ./scripts/test-busy.sh                      # the whole suite
#   ./scripts/test-busy.sh go test -tags e2e -count=1 -run 'TestCluster_Takeover$' ./e2e/
set -euo pipefail
cd "$(dirname "$0")/.."

hogs=()
stop_hogs() { ((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$(nproc)"); do
	nice -n 19 sh -c 'while :; do :; done' &
	hogs+=($!)
done
echo "== ${#hogs[@]} CPU hogs at nice 19"
if (($#)); then
	"$@"
else
	./scripts/test.sh
fi
