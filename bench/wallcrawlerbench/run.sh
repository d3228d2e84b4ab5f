#!/usr/bin/env bash
# bench/wallcrawlerbench/run.sh — Wallcrawler session start, cold and with a
# warm pool, and page loads direct vs through the egress proxy; results
# appended to bench/RESULTS.md.
#
# Usage: bench/wallcrawlerbench/run.sh [extra wallcrawlerbench flags...]
# Environment: SESSIONS (50), POOLS ("0,4"), PAGELOAD (30 measured loads
# per series and round; 0: no page-load mode), ROUNDS (3), OUT
# (bench/RESULTS.md).
# Needs chromium on PATH (or QUARRY_CHROMIUM). Builds ./cmd/quarry into a
# temporary directory; every server the harness starts listens on 127.0.0.1
# and is stopped (SIGTERM) before it exits.
set -euo pipefail

cd "$(dirname "$0")/../.."
SESSIONS=${SESSIONS:-50}
POOLS=${POOLS:-0,4}
PAGELOAD=${PAGELOAD:-30}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-bench/RESULTS.md}

WORK=$(mktemp -d /tmp/wallcrawlerbench-run.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
go build -o "$WORK/quarry" ./cmd/quarry
go build -o "$WORK/wallcrawlerbench" ./bench/wallcrawlerbench
WALLCRAWLERBENCH_VIA="env SESSIONS=$SESSIONS POOLS=$POOLS PAGELOAD=$PAGELOAD ROUNDS=$ROUNDS bench/wallcrawlerbench/run.sh" \
	"$WORK/wallcrawlerbench" -quarry "$WORK/quarry" -sessions "$SESSIONS" -pools "$POOLS" \
	-pageload "$PAGELOAD" -rounds "$ROUNDS" -out "$OUT" "$@"
