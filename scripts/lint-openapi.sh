#!/usr/bin/env bash
# Lints the generated OpenAPI spec with Redocly CLI and Spectral, with the
# rulesets in openapi/ (each exception there says why). The linters, Prism
# (whose validating proxy cmd/sdnlb's TestOpenAPIPrism runs) and everything
# they load are pinned by openapi/lint/package-lock.json and installed with
# npm into a directory outside the repository, once: later runs reuse it
# and need no network. scripts/test.sh runs this.
#
#   SDNLB_LINT_TOOLS  where the linters are installed
#                     (default ${XDG_CACHE_HOME:-~/.cache}/sdnlb/openapi-lint)
#
# Needs Node.js 20.19+ or 22.12+ (what Redocly CLI 2.77.0 runs on) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

pins=openapi/lint
tools="${SDNLB_LINT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/sdnlb/openapi-lint}"

fail() {
	echo "lint-openapi: $*" >&2
	exit 1
}

# node_supported tells whether the node on PATH is a version Redocly CLI
# 2.77.0 declares it runs on (engines: >=20.19 <21, or >=22.12).
node_supported() {
	local v major minor
	v="$(node --version)"
	v="${v#v}"
	major="${v%%.*}"
	minor="${v#*.}"
	minor="${minor%%.*}"
	((major == 20 && minor >= 19)) || ((major == 22 && minor >= 12)) || ((major > 22))
}

command -v node >/dev/null || fail "Node.js is missing: install Node.js 20.19+ or 22.12+ and npm (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null || fail "npm is missing: install it (Debian: apt-get install npm)"
node_supported || fail "Node.js $(node --version) is too old for Redocly CLI 2.77.0: install Node.js 20.19+ or 22.12+ (Debian 13's nodejs package, or NodeSource's for older releases)"

# The installed tree is the pinned one while its copy of the lock file
# matches; the copy is written last, so an interrupted install is redone.
if ! cmp -s "$pins/package-lock.json" "$tools/installed.lock"; then
	echo "== installing the OpenAPI linters ($pins/package-lock.json) into $tools"
	rm -rf "$tools"
	mkdir -p "$tools"
	cp "$pins/package.json" "$pins/package-lock.json" "$tools/"
	# No install scripts: the linters need none (one dependency's only
	# reports usage).
	(cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
	cp "$pins/package-lock.json" "$tools/installed.lock"
fi

export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
"$tools/node_modules/.bin/redocly" lint --config openapi/redocly.yaml openapi/swagger.yaml
"$tools/node_modules/.bin/spectral" lint --fail-severity=warn -r openapi/.spectral.yaml openapi/swagger.yaml
