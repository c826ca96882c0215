#!/bin/sh
# Install the pinned Allure Report 3 CLI (package-lock.json) into nodeconf/report/npm/node_modules (git-ignored).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm >/dev/null 2>&1; then
    echo "install-tool.sh: npm not found; install Node.js >= 20 with npm first" >&2
    exit 2
fi
npm ci --prefix "$here/npm" --no-audit --no-fund --loglevel=error
"$here/npm/node_modules/.bin/allure" --version
