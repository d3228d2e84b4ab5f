#!/bin/bash
# bench/idlecpu.sh BASE NEW: the CPU an idle `quarry serve` (all systems,
# embedded store, fresh data directories) uses over 120 s, two builds side
# by side. Usage: bench/idlecpu.sh /path/to/quarry-base /path/to/quarry
set -euo pipefail
base=$1 new=$2
work=$(mktemp -d)
trap 'kill $B $N 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$base" serve --listen 127.0.0.1:18080 --ddb-listen 127.0.0.1:18000 --data-dir "$work/base" >"$work/base.log" 2>&1 &
B=$!
"$new" serve --listen 127.0.0.1:18081 --ddb-listen 127.0.0.1:18001 --data-dir "$work/new" >"$work/new.log" 2>&1 &
N=$!
sleep 30 # start-up (EECAR's load, the systems' tables) is not idle time
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
b0=$(cpu $B) n0=$(cpu $N)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
sleep 120
b1=$(cpu $B) n1=$(cpu $N)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
tick=$(getconf CLK_TCK)
awk -v b=$((b1 - b0)) -v n=$((n1 - n0)) -v t="$tick" 'BEGIN {
	printf "base: %.2f s of CPU a minute; this build: %.2f s a minute (%.2fx)\n", b/t/2, n/t/2, (b ? n/b : 0) }'
