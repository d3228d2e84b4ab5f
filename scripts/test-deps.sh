#!/usr/bin/env bash
# Installs what quarry needs when it is missing. Idempotent; quick when
# everything is there.
#
#   scripts/test-deps.sh         what `make test` needs
#   scripts/test-deps.sh run     what `make run` needs: Chromium only
#   scripts/test-deps.sh peers   what the tests need, and dynalite for
#                                `make test-peer` and `make bench`
#
# - Debian packages (when running as root), installed without their
#   recommended packages (half of Chromium's 290 are desktop services,
#   printing and Perl; npm's are compilers and X tools):
#   chromium for Wallcrawler's browsers, with fonts-liberation so that pages
#   asking for Arial, Times or Courier render with their metrics
#   (fontconfig's dependency fonts-dejavu-core covers the rest);
#   chromium-driver (chromedriver, Chromium's own version) for the
#   sessions' Selenium endpoints;
#   ca-certificates for HTTPS from Go; for the tests also postgresql
#   (DataShelf's contract tests run against a real server, started by
#   scripts/pg-start.sh) and nodejs/npm for the peers below.
# - npm peers, into $PEERS_DIR, never into the repository's tracked files:
#   the Browserbase SDK and playwright-core (cmd/quarry's SDK compatibility
#   test), the AWS SDK for JavaScript v3's DynamoDB client (ddb's
#   TestClients/sdk-js-v3); with "peers", dynalite (the store's comparison
#   peer).
# - boto3 and the AWS CLI for ddb's TestClients: the Debian packages
#   python3-boto3 and awscli when `python3 -c 'import boto3'` or `aws` fails
#   (a boto3 or aws already on PATH, from pip or pyenv, is used as it is).
# - staticcheck (run by `make lint`), built from the Go module proxy at the
#   version pinned below into $STATICCHECK (default .cache/bin/staticcheck),
#   when that file is missing or reports another version.

# - versitygw (the S3 gateway the S3 tests run, with a posix backend), built
#   with `go install` from its Go module at a pinned version into
#   $PEERS_DIR/bin. A cold build takes over a minute, so it runs in the
#   background, started first, while the packages install and make test
#   goes on with lint and the other tests; the S3 tests wait for it
#   (internal/testenv, under a deadline). $PEERS_DIR/bin/versitygw.installing
#   holds the builder's pid while it runs, versitygw.log its output.
# Not root, or no apt-get: what is missing is named, nothing is installed.
set -euo pipefail
PEERS_DIR=${PEERS_DIR:-$(pwd)/.cache/peers}
mode=${1:-test}

VERSITYGW_VERSION=v1.8.0
GO=${GO:-go}

# versitygw_start starts the background build of versitygw into
# $PEERS_DIR/bin unless that version is there or a build is running.
versitygw_start() {
	local bin=$PEERS_DIR/bin
	local marker=$bin/versitygw.installing
	if [ -x "$bin/versitygw" ] && "$GO" version -m "$bin/versitygw" 2>/dev/null |
		grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$VERSITYGW_VERSION[[:space:]]"; then
		return 0
	fi
	if [ -f "$marker" ] && grep -qs versitygw-build "/proc/$(cat "$marker")/cmdline"; then
		echo "deps: versitygw $VERSITYGW_VERSION is being built already (log: $bin/versitygw.log)"
		return 0
	fi
	if ! command -v "$GO" >/dev/null; then
		echo "deps: no go on PATH: cannot build versitygw (the S3 tests will fail)" >&2
		return 0
	fi
	mkdir -p "$bin"
	rm -f "$bin/versitygw"
	echo "deps: building versitygw $VERSITYGW_VERSION into $bin in the background (log: $bin/versitygw.log)"
	# Built into a staging directory and moved, so that the binary appears
	# whole; the marker goes when the build ends, whatever its outcome.
	nohup bash -c 'stage=$(mktemp -d "$1/.versitygw-XXXXXX") &&
		GOBIN=$stage "$2" install -ldflags=-s\ -w "github.com/versity/versitygw/cmd/versitygw@$3" &&
		mv "$stage/versitygw" "$1/versitygw"; rc=$?
		rm -rf "$stage" "$1/versitygw.installing"
		[ $rc = 0 ] && echo "versitygw $3 installed" || echo "versitygw $3 build failed"
		exit $rc' versitygw-build "$bin" "$GO" "$VERSITYGW_VERSION" >"$bin/versitygw.log" 2>&1 </dev/null &
	echo $! >"$marker"
}
[ "$mode" = run ] || versitygw_start

have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; }

need_pkgs=()
have_chromium || need_pkgs+=(chromium fonts-liberation)
command -v chromedriver >/dev/null || need_pkgs+=(chromium-driver)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need_pkgs+=(ca-certificates)
if [ "$mode" != run ]; then
	command -v node >/dev/null || need_pkgs+=(nodejs)
	command -v npm >/dev/null || need_pkgs+=(npm)
	ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || need_pkgs+=(postgresql)
	python3 -c 'import boto3' >/dev/null 2>&1 || need_pkgs+=(python3-boto3)
	command -v aws >/dev/null || need_pkgs+=(awscli)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "deps: installing ${need_pkgs[*]} (apt-get, no recommended packages)"
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null; }; then
			# quarry runs without them (Wallcrawler degraded, as its banner
			# says); the tests would fail, so make test stops here.
			echo "deps: installing ${need_pkgs[*]} failed" >&2
			[ "$mode" = run ] || exit 1
		fi
	else
		echo "deps: missing ${need_pkgs[*]}: install them (as root: apt-get install --no-install-recommends ${need_pkgs[*]})" >&2
	fi
fi
[ "$mode" != run ] || exit 0

STATICCHECK=${STATICCHECK:-$(pwd)/.cache/bin/staticcheck}
STATICCHECK_VERSION=v0.8.2
if ! "$STATICCHECK" -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
	echo "deps: installing staticcheck $STATICCHECK_VERSION into $(dirname "$STATICCHECK")"
	mkdir -p "$(dirname "$STATICCHECK")"
	# go install names the binary after the command; built in a scratch
	# GOBIN and moved, so that $STATICCHECK may have any name.
	gobin=$(mktemp -d)
	if GOBIN=$gobin "${GO:-go}" install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"; then
		mv "$gobin/staticcheck" "$STATICCHECK"
	else
		echo "deps: staticcheck install failed (make lint will fail)" >&2
	fi
	rm -rf "$gobin"
fi

npm_install() { # npm_install WHAT PACKAGE@VERSION...
	local what=$1
	shift
	echo "deps: installing $what into $PEERS_DIR"
	mkdir -p "$PEERS_DIR"
	(cd "$PEERS_DIR" && { [ -f package.json ] || echo '{"private":true}' >package.json; } &&
		npm install --no-audit --no-fund --silent "$@" >/dev/null 2>&1) ||
		echo "deps: $what install failed (what uses it will fail)" >&2
}
if command -v npm >/dev/null; then
	if [ "$mode" = peers ] && [ ! -f "$PEERS_DIR/node_modules/dynalite/cli.js" ]; then
		npm_install dynalite dynalite@4.0.0
	fi
	if [ ! -f "$PEERS_DIR/node_modules/@browserbasehq/sdk/package.json" ] || [ ! -f "$PEERS_DIR/node_modules/playwright-core/package.json" ]; then
		npm_install "@browserbasehq/sdk and playwright-core" @browserbasehq/sdk@2.21.0 playwright-core@1.65.1
	fi
	if ! grep -qs '"version": "3.1169.0"' "$PEERS_DIR/node_modules/@aws-sdk/client-dynamodb/package.json"; then
		npm_install @aws-sdk/client-dynamodb @aws-sdk/client-dynamodb@3.1169.0
	fi
fi
exit 0
