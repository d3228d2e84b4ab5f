#!/usr/bin/env bash
# bench/peers/gatus/run.sh — the Checks scheduler of `quarry serve` vs Gatus
# on the same N loopback endpoints; results appended to bench/RESULTS.md.
# Environment: N (1000), INTERVAL (60s), DURATION (3m: the measured window,
# after every endpoint was requested once; Gatus starts its endpoints
# 222 ms apart, so with N = 1000 the first round alone takes ~4 min),
# GATUS_VERSION (v5.36.0), OUT (bench/RESULTS.md), BASE (a git revision:
# quarry built from it is measured too, as quarry-base, in the same run);
# extra arguments (make's ARGS) go to the harness. quarry serves Checks
# alone (--systems checks), the like-for-like process beside Gatus, which
# only monitors.
# Gatus is built from its Go module (github.com/TwiN/gatus/v5, from the
# module proxy) in a throw-away module under .cache/gatus-build into
# .cache/peers-bin/gatus-$GATUS_VERSION, once; quarry from this tree.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
export PATH=/usr/local/go/bin:$PATH
N=${N:-1000}
INTERVAL=${INTERVAL:-60s}
DURATION=${DURATION:-3m}
GATUS_VERSION=${GATUS_VERSION:-v5.36.0}
OUT=${OUT:-bench/RESULTS.md}
GATUS=$ROOT/.cache/peers-bin/gatus-$GATUS_VERSION
if [[ ! -x $GATUS ]]; then
	echo "run.sh: building Gatus $GATUS_VERSION (several minutes on a busy machine)" >&2
	mkdir -p .cache/gatus-build .cache/peers-bin
	printf 'module gatusbuild\n\ngo 1.26\n\nrequire github.com/TwiN/gatus/v5 %s\n' "$GATUS_VERSION" >.cache/gatus-build/go.mod
	(cd .cache/gatus-build && GOWORK=off go build -mod=mod -o "$GATUS" github.com/TwiN/gatus/v5)
fi
WORK=$(mktemp -d /tmp/gatusbench-run.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
go build -o "$WORK/quarry" ./cmd/quarry
go build -o "$WORK/gatusbench" ./bench/peers/gatus
base=()
if [[ -n ${BASE:-} ]]; then
	rev=$(git rev-parse --short "$BASE^{commit}")
	mkdir "$WORK/base"
	git archive "$rev" | tar -x -C "$WORK/base"
	(cd "$WORK/base" && go build -o "$WORK/quarry-base" ./cmd/quarry)
	base=(-quarry-base "$WORK/quarry-base" -base-label "$rev" -systems quarry-base,quarry,gatus)
fi
"$WORK/gatusbench" -quarry "$WORK/quarry" -gatus "$GATUS" -gatus-version "$GATUS_VERSION" \
	-n "$N" -interval "$INTERVAL" -duration "$DURATION" -out "$OUT" "${base[@]}" \
	-command "make bench-gatus N=$N INTERVAL=$INTERVAL DURATION=$DURATION${BASE:+ BASE=$BASE}${*:+ ARGS='$*'}" "$@"
