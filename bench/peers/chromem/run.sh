#!/usr/bin/env bash
# bench/peers/chromem/run.sh — EECAR's search index vs chromem-go on the
# same vectors; results appended to bench/RESULTS.md.
# Environment: SIZES (5000,100000), QUERIES (1000), DIM (256),
# OUT (bench/RESULTS.md), BASE (a git revision: its internal/eecar/search
# and internal/eecar/embed are copied into basesearch/ and baseembed/, and
# that index, tokenizing with that embed, is measured beside the current
# one as "quarry before", in the same process). chromem-go comes from the Go module proxy into
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
base=()
if [ -n "${BASE:-}" ]; then
	rev=$(git -C "$ROOT" rev-parse --short "$BASE")
	# The index and the tokenizer it is given, both as they were at rev.
	for pkg in search embed; do
		rm -rf "base$pkg" && mkdir "base$pkg"
		for f in $(git -C "$ROOT" ls-tree --name-only "$rev" "internal/eecar/$pkg/" | grep -E '\.(go|tsv)$' | grep -v '_test\.go$'); do
			git -C "$ROOT" show "$rev:$f" >"base$pkg/$(basename "$f")"
		done
	done
	base=(-tags base -base-rev "$rev")
fi
go run "${base[@]:0:2}" . -sizes "$SIZES" -queries "$QUERIES" -dim "$DIM" -out "$OUT" "${base[@]:2}" \
	-command "make bench-chromem SIZES=$SIZES QUERIES=$QUERIES DIM=$DIM${BASE:+ BASE=$BASE}${*:+ ARGS='$*'}" "$@"
