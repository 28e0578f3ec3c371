#!/usr/bin/env bash
# THE test command: formatting, vet, the OpenAPI lint, the hermetic tests,
# then the e2e tests on a private Open vSwitch (root only). On a fresh Debian
# machine run as root it installs what the e2e bed needs first, FRR for the
# BGP tests' router, Node.js and npm for the lint, and PostgreSQL, on which
# the store tests run a second time (a private server;
# SDNLB_TEST_POSTGRES=skip leaves that pass out, for developers without
# PostgreSQL).
set -euo pipefail

export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/.."

e2e_commands=(ovsdb-server ovs-vswitchd ovs-vsctl ovs-ofctl ovsdb-tool ethtool ip ping curl python3 promtool chromium)

missing_commands() {
	local cmd
	for cmd in "${e2e_commands[@]}"; do
		command -v "$cmd" >/dev/null 2>&1 || echo "$cmd"
	done
}

# apt_install installs packages with apt-get. The tests run their own
# ovsdb-server, ovs-vswitchd and postgres, so the packages' system services
# must not start: policy-rc.d answers 101 ("not allowed") to every service
# start during the install.
apt_install() {
	local policy=/usr/sbin/policy-rc.d created_policy=""
	if [[ ! -e "$policy" ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		created_policy=1
	fi
	local apt_opts=(-o DPkg::Lock::Timeout=300 -q)
	local rc=0
	DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update || rc=$?
	if [[ $rc -eq 0 ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y "$@" || rc=$?
	fi
	[[ -n "$created_policy" ]] && rm -f "$policy"
	[[ $rc -eq 0 ]] || { echo "apt-get failed ($rc)" >&2; return "$rc"; }
}

# install_e2e_deps installs the e2e tools with apt-get when one is missing.
install_e2e_deps() {
	local missing
	missing="$(missing_commands)"
	[[ -z "$missing" ]] && return 0
	echo "== installing e2e tools (missing: $(echo "$missing" | tr '\n' ' '))"
	apt_install openvswitch-switch ethtool iproute2 iputils-ping curl python3 prometheus chromium
	# Should a system Open vSwitch have started anyway (systemd without
	# policy-rc.d support), stop it: our tests use private daemons only.
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet openvswitch-switch 2>/dev/null; then
		systemctl stop openvswitch-switch || true
	fi
	missing="$(missing_commands)"
	if [[ -n "$missing" ]]; then
		echo "still missing after install: $missing" >&2
		return 1
	fi
}

# have_postgres tells whether the PostgreSQL server programs the store
# tests start (initdb, postgres) are there: on PATH or where Debian puts them.
have_postgres() {
	local bin
	for bin in initdb postgres; do
		command -v "$bin" >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/$bin" >/dev/null || return 1
	done
}

# install_postgres installs the Debian postgresql package when the server
# programs are missing. The store tests run a private server of their own
# (lbstore's TestMain), never the package's.
install_postgres() {
	have_postgres && return 0
	echo "== installing PostgreSQL for the store tests"
	apt_install postgresql
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet postgresql 2>/dev/null; then
		systemctl stop postgresql || true
	fi
	have_postgres || { echo "PostgreSQL's initdb and postgres still missing after install" >&2; return 1; }
}

# have_frr tells whether FRR's zebra, bgpd and vtysh are there: the BGP
# e2e tests run them in a network namespace of their own, with their own
# files, as the user frr (Debian's frr package puts the daemons in
# /usr/lib/frr).
have_frr() {
	[[ -x /usr/lib/frr/zebra && -x /usr/lib/frr/bgpd ]] && command -v vtysh >/dev/null 2>&1 && id frr >/dev/null 2>&1
}

# install_frr installs the Debian frr package when FRR is missing, and
# fails when it still is: the BGP e2e tests need it. Its system service
# must not run; the tests start their own daemons.
install_frr() {
	have_frr && return 0
	echo "== installing FRR for the BGP e2e tests"
	apt_install frr
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet frr 2>/dev/null; then
		systemctl stop frr || true
	fi
	have_frr || { echo "FRR's zebra, bgpd, vtysh or its user frr still missing after installing frr: the BGP e2e tests cannot run" >&2; return 1; }
}

# install_node installs Node.js and npm, which scripts/lint-openapi.sh runs
# the linters on, when missing; that script says so when the Node.js it finds
# is too old. NodeSource's nodejs package carries its own npm and conflicts
# with Debian's, so npm is installed only when node came without it.
install_node() {
	if ! command -v node >/dev/null 2>&1; then
		echo "== installing Node.js for the OpenAPI lint"
		apt_install nodejs
	fi
	if ! command -v npm >/dev/null 2>&1; then
		echo "== installing npm for the OpenAPI lint"
		apt_install npm
	fi
}

is_root=""
[[ "$(id -u)" -eq 0 ]] && is_root=1

if [[ -n "$is_root" ]]; then
	install_e2e_deps
	install_frr
	install_postgres
	install_node
elif ! have_postgres && [[ "${SDNLB_TEST_POSTGRES:-}" != "skip" ]]; then
	echo "== PostgreSQL is missing and only root can install it: the store tests will fail;" >&2
	echo "   install the postgresql package, or set SDNLB_TEST_POSTGRES=skip to test the SQLite store only" >&2
fi

echo "== go version: $(go version)"

echo "== gofmt"
unformatted="$(gofmt -l .)"
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi

# Packages with e2e-tagged files: ./e2e/ and any package that keeps an
# OVS-backed test beside its code.
mapfile -t e2e_pkgs < <(grep -rl --include='*.go' '^//go:build.*e2e' . | grep -v '/testdata/' | xargs -r -n1 dirname | sort -u)
[[ ${#e2e_pkgs[@]} -gt 0 ]] || e2e_pkgs=(./e2e/...)

echo "== go vet"
go vet ./...
go vet -tags e2e "${e2e_pkgs[@]}"

echo "== OpenAPI lint (Redocly CLI, Spectral)"
export SDNLB_LINT_TOOLS="${SDNLB_LINT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/sdnlb/openapi-lint}"
./scripts/lint-openapi.sh
# Installed with the linters: Prism, whose validating proxy checks a
# session against the spec (cmd/sdnlb's TestOpenAPIPrism).
export SDNLB_PRISM="$SDNLB_LINT_TOOLS/node_modules/.bin/prism"

echo "== hermetic tests"
go test -race -count=1 -timeout 10m ./...

if [[ -z "$is_root" ]]; then
	echo "== SKIPPING the alert rules check and the e2e tests: they need root (installed tools, network namespaces, Open vSwitch); run as root to include them"
	exit 0
fi

echo "== alert rules (promtool)"
promtool check rules deploy/prometheus/alerts.yml
promtool test rules deploy/prometheus/alerts_test.yml

# The e2e tests run in two lanes at once. Open vSwitch runs one userspace
# datapath per network namespace, so the second lane runs in a namespace of
# its own, with its own loopback, switches and sdnlb processes. Most of an
# e2e test's time is waiting (for monitors, leases, idle timeouts), not
# CPU, so the lanes halve the wall time. Lane 2 takes the families of
# tests with beds of their own making (clusters, fabrics, the browser, the
# demo, the adaptive weighing); lane 1 the rest and the other packages.
lane2='^Test(Adaptive|BGP|Cluster|Dashboard|Demo|Fabric|Topology)'
lane_ns="sdnlb-e2e-lane-$$"
for ns in $(ip netns list 2>/dev/null | awk '/^sdnlb-e2e-lane-/ {print $1}'); do
	kill -0 "${ns##*-}" 2>/dev/null || ip netns del "$ns"
done
ip netns add "$lane_ns"
ip netns exec "$lane_ns" ip link set lo up

echo "== e2e tests (private Open vSwitch, userspace datapath, two lanes): ${e2e_pkgs[*]}"
# As JSON, so the report can show each failed test's whole output and the
# ten slowest tests; the exit status is go test's.
lane1_json="$(mktemp)" lane2_json="$(mktemp)"
trap 'rm -f "$lane1_json" "$lane2_json"; ip netns del "$lane_ns" 2>/dev/null || true' EXIT
e2e_test=(go test -race -count=1 -tags e2e -p 1 -timeout 15m -json)
"${e2e_test[@]}" -skip "$lane2" "${e2e_pkgs[@]}" >"$lane1_json" 2>&1 &
lane1_pid=$!
ip netns exec "$lane_ns" "${e2e_test[@]}" -run "$lane2" ./e2e >"$lane2_json" 2>&1 &
lane2_pid=$!
e2e_rc=0
wait "$lane1_pid" || e2e_rc=$?
wait "$lane2_pid" || e2e_rc=$?
python3 scripts/e2e-report.py "$lane1_json" "$lane2_json"
exit "$e2e_rc"
