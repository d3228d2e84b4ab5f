#!/usr/bin/env bash
# bench/peers/river/run.sh — DataShelf's job queue vs River on one
# PostgreSQL cluster with fsync on (bench/peers/pg-durable.sh, stopped
# again at the end); results appended to bench/RESULTS.md.
# Environment: JOBS (20000 per round: a round of 3000 lasts about a second,
# and its throughput moves by a third from run to run), ROUNDS (3), WORKERS
# (8), RATE (50 jobs/s), LATENCY (10s), JOB_TIME (0: no-op jobs; e.g. 20ms
# for jobs as long as a crawl's page fetch), JOB_SPREAD (0; e.g. 10ms: each
# job takes JOB_TIME ± up to that, as page fetches vary),
# OUT (bench/RESULTS.md); extra arguments (make's ARGS) go to the harness
# (e.g. ARGS='-quarry-poll 10ms'); FSYNC_OFF=1 adds the tests' cluster
# (scripts/pg-start.sh, fsync off) as a second set of rows.
# River and its dependencies come from the Go module proxy into the module
# cache (outside the tree), through this directory's own go.mod.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
export PATH=/usr/local/go/bin:$PATH
JOBS=${JOBS:-20000}
JOB_TIME=${JOB_TIME:-0s}
JOB_SPREAD=${JOB_SPREAD:-0s}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-8}
RATE=${RATE:-50}
LATENCY=${LATENCY:-10s}
OUT=${OUT:-bench/RESULTS.md}
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac
stop_test_pg=0
cleanup() {
	bash "$ROOT/bench/peers/pg-durable.sh" stop
	if [[ $stop_test_pg = 1 ]]; then (cd "$ROOT" && bash scripts/pg-stop.sh); fi
}
trap cleanup EXIT
targets="fsync on=$(bash bench/peers/pg-durable.sh start)"
if [[ ${FSYNC_OFF:-0} = 1 ]]; then
	# The tests' cluster: stopped again at the end unless it was running.
	[[ -f .cache/pg/data/postmaster.pid ]] || stop_test_pg=1
	targets+=",fsync off=$(bash scripts/pg-start.sh)"
fi
cmd="make bench-river JOBS=$JOBS ROUNDS=$ROUNDS WORKERS=$WORKERS RATE=$RATE LATENCY=$LATENCY JOB_TIME=$JOB_TIME JOB_SPREAD=$JOB_SPREAD${FSYNC_OFF:+ FSYNC_OFF=$FSYNC_OFF}${*:+ ARGS='$*'}"
cd bench/peers/river
go run . -postgres "$targets" -jobs "$JOBS" -rounds "$ROUNDS" -workers "$WORKERS" -rate "$RATE" -job-time "$JOB_TIME" -job-spread "$JOB_SPREAD" \
	-latency-duration "$LATENCY" -out "$OUT" -command "$cmd" "$@"
