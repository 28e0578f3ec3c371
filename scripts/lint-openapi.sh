#!/usr/bin/env bash
# Lints the generated OpenAPI spec with Redocly CLI and Spectral, pinned,
# with the rulesets in openapi/ (each exception there says why). Needs
# Node.js 20 or later and npm (npx fetches the tools).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npx >/dev/null || { echo "lint-openapi: npx (npm) is missing" >&2; exit 1; }
npx -y @redocly/cli@2.77.0 lint --config openapi/redocly.yaml openapi/swagger.yaml
npx -y @stoplight/spectral-cli@6.16.3 lint --fail-severity=warn -r openapi/.spectral.yaml openapi/swagger.yaml
