#!/usr/bin/env bash
# bench/wallcrawlerbench/run.sh — Wallcrawler session start, cold and with a
# warm pool; results appended to bench/RESULTS.md.
#
# Usage: bench/wallcrawlerbench/run.sh [extra wallcrawlerbench flags...]
# Environment: SESSIONS (50), POOLS ("0,4"), OUT (bench/RESULTS.md).
# Needs chromium on PATH (or QUARRY_CHROMIUM). Builds ./cmd/quarry into a
# temporary directory; every server the harness starts listens on 127.0.0.1
# and is stopped (SIGTERM) before it exits.
set -euo pipefail

cd "$(dirname "$0")/../.."
SESSIONS=${SESSIONS:-50}
POOLS=${POOLS:-0,4}
OUT=${OUT:-bench/RESULTS.md}

WORK=$(mktemp -d /tmp/wallcrawlerbench-run.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
go build -o "$WORK/quarry" ./cmd/quarry
go build -o "$WORK/wallcrawlerbench" ./bench/wallcrawlerbench
WALLCRAWLERBENCH_VIA="env SESSIONS=$SESSIONS POOLS=$POOLS bench/wallcrawlerbench/run.sh" \
	"$WORK/wallcrawlerbench" -quarry "$WORK/quarry" -sessions "$SESSIONS" -pools "$POOLS" -out "$OUT" "$@"
