#!/usr/bin/env bash
# Runs the store's SDK test suite against dynalite on a loopback port.
set -euo pipefail
PEERS_DIR=${PEERS_DIR:-$(pwd)/.cache/peers}
PORT=${PORT:-4567}
cli="$PEERS_DIR/node_modules/dynalite/cli.js"
[ -f "$cli" ] || { echo "dynalite is not installed (make test-deps)"; exit 1; }
node "$cli" --port "$PORT" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
	sleep 0.1
done
QUARRY_DDB_TEST_ENDPOINT="http://127.0.0.1:$PORT" go test -count=1 -run 'TestSDK|TestSeed' ./ddb/ "$@"
