#!/usr/bin/env bash
# Side-by-side measurements on a private Open vSwitch, as root, on a quiet
# machine: throughput and latency of a member directly, the sdnlb paths and
# HAProxy (TestThroughputComparison), and failover against HAProxy
# (TestFailoverComparison). Installs wrk and HAProxy when missing; sdnlb is
# built without -race so the controller's path is measured at full speed.
# Arguments: the tests to run (a -run pattern) and how many times
# (-count), e.g. ./scripts/bench-e2e.sh TestCluster_Takeover 7.
set -euo pipefail

export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/.."

if [[ $EUID -ne 0 ]]; then
	echo "bench-e2e: run as root (it creates network namespaces and an Open vSwitch)" >&2
	exit 1
fi
missing=()
for cmd in wrk haproxy ovs-vswitchd; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if ((${#missing[@]})); then
	echo "== installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -q update
	DEBIAN_FRONTEND=noninteractive apt-get -q install -y wrk haproxy openvswitch-switch ethtool iproute2
fi

bin="$(mktemp -d)/sdnlb"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/sdnlb
SDNLB_E2E_BINARY="$bin" go test -count="${2:-1}" -timeout 30m -tags 'e2e e2e_bench' \
	-run "${1:-TestThroughputComparison|TestFailoverComparison}" -v ./e2e/
