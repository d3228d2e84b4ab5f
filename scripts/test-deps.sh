#!/usr/bin/env bash
# Installs what quarry's tests need when it is missing. Idempotent.
# - Debian packages (when running as root): postgresql (DataShelf's contract
#   tests run against a real server, started by scripts/pg-start.sh);
#   nodejs/npm for the peers below. chromium for Wallcrawler's browser tests.
# - npm peers for comparison tests and benchmarks (dynalite), into
#   $PEERS_DIR, never into the repository's tracked files. Best effort: the
#   Go tests do not need them.
set -euo pipefail
PEERS_DIR=${PEERS_DIR:-$(pwd)/.cache/peers}

need_pkgs=()
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	command -v node >/dev/null || need_pkgs+=(nodejs npm)
	ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || need_pkgs+=(postgresql)
	command -v chromium >/dev/null || need_pkgs+=(chromium)
	if [ ${#need_pkgs[@]} -gt 0 ]; then
		echo "test-deps: installing ${need_pkgs[*]}"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
	fi
fi

if command -v npm >/dev/null && [ ! -f "$PEERS_DIR/node_modules/dynalite/cli.js" ]; then
	echo "test-deps: installing dynalite into $PEERS_DIR"
	mkdir -p "$PEERS_DIR"
	(cd "$PEERS_DIR" && { [ -f package.json ] || echo '{"private":true}' > package.json; } &&
		npm install --no-audit --no-fund --silent dynalite@4.0.0 >/dev/null 2>&1) ||
		echo "test-deps: dynalite install failed (peer tests and benchmarks will skip it)"
fi
if command -v npm >/dev/null && [ ! -f "$PEERS_DIR/node_modules/@browserbasehq/sdk/package.json" -o ! -f "$PEERS_DIR/node_modules/playwright-core/package.json" ]; then
	echo "test-deps: installing @browserbasehq/sdk and playwright-core into $PEERS_DIR"
	mkdir -p "$PEERS_DIR"
	(cd "$PEERS_DIR" && { [ -f package.json ] || echo '{"private":true}' > package.json; } &&
		npm install --no-audit --no-fund --silent @browserbasehq/sdk@2.21.0 playwright-core@1.65.1 >/dev/null 2>&1) ||
		echo "test-deps: Browserbase SDK install failed (the SDK compatibility test will fail)"
fi
exit 0
