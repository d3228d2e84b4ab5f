#!/usr/bin/env bash
# bench/peers/pg-durable.sh start|stop — a private PostgreSQL cluster for the
# benchmarks, with PostgreSQL's durable defaults (fsync=on,
# synchronous_commit=on, full_page_writes=on), unlike the tests' cluster of
# scripts/pg-start.sh, which runs with fsync off. `start` prints its URL.
# The cluster lives in $PG_DIR (default .cache/pg-bench), listens on
# 127.0.0.1:$PG_PORT (default 54359, or the next free port) only and trusts
# local connections: it is for benchmarks, never for data. It is
# scripts/pg-start.sh and scripts/pg-stop.sh with PG_DURABLE=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PG_DIR=${PG_DIR:-$ROOT/.cache/pg-bench}
export PG_PORT=${PG_PORT:-54359}
export PG_DURABLE=1
case "${1:-start}" in
start) exec bash "$ROOT/scripts/pg-start.sh" ;;
stop) exec bash "$ROOT/scripts/pg-stop.sh" ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
