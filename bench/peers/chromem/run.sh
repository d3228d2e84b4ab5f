#!/usr/bin/env bash
# bench/peers/chromem/run.sh — EECAR's search index vs chromem-go on the
# same vectors; results appended to bench/RESULTS.md.
# Environment: SIZES (5000,100000), QUERIES (1000), DIM (256),
# OUT (bench/RESULTS.md). chromem-go comes from the Go module proxy into
# the module cache (outside the tree), through this directory's own go.mod.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
export PATH=/usr/local/go/bin:$PATH
SIZES=${SIZES:-5000,100000}
QUERIES=${QUERIES:-1000}
DIM=${DIM:-256}
OUT=${OUT:-bench/RESULTS.md}
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac
cd "$ROOT/bench/peers/chromem"
go run . -sizes "$SIZES" -queries "$QUERIES" -dim "$DIM" -out "$OUT" \
	-command "make bench-chromem SIZES=$SIZES QUERIES=$QUERIES DIM=$DIM${*:+ ARGS='$*'}" "$@"
