#!/usr/bin/env bash
# Runs every fuzz target of the tree: each `func Fuzz…` of every package
# that `go list ./...` lists, one at a time (go test -fuzz takes one
# target of one package), for FUZZTIME each (default 20s).
#   FUZZTIME=1m bash scripts/fuzz.sh          all of them
#   FUZZ_LIST=1 bash scripts/fuzz.sh          only list them
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
found=0
while read -r pkg dir; do
	# Only packages whose test files declare a fuzz target are compiled
	# for go test -list, which then gives the targets exactly (build tags
	# included).
	grep -qs '^func Fuzz' "$dir"/*_test.go || continue
	for target in $("$GO" test "$pkg" -list '^Fuzz' | grep '^Fuzz'); do
		found=$((found + 1))
		if [ -n "${FUZZ_LIST:-}" ]; then
			echo "$pkg $target"
			continue
		fi
		echo "== $pkg $target ($FUZZTIME)"
		"$GO" test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME"
	done
done < <("$GO" list -f '{{.ImportPath}} {{.Dir}}' ./...)
[ "$found" -gt 0 ] || { echo "no fuzz targets found" >&2; exit 1; }
echo "$found fuzz targets"
