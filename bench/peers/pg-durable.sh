#!/usr/bin/env bash
# bench/peers/pg-durable.sh start|stop — a private PostgreSQL cluster for the
# benchmarks, with PostgreSQL's durable defaults (fsync=on,
# synchronous_commit=on, full_page_writes=on), unlike scripts/pg-start.sh,
# whose test cluster runs with fsync off. `start` prints its URL. The
# cluster lives in $PG_DIR (default .cache/pg-bench), listens on
# 127.0.0.1:$PG_PORT (default 54359, or the next free port) only and trusts
# local connections: it is for benchmarks, never for data.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PG_DIR=${PG_DIR:-$ROOT/.cache/pg-bench}
PG_PORT=${PG_PORT:-54359}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$PGBIN" ]; then
	echo "pg-durable: PostgreSQL is not installed (run scripts/test-deps.sh as root)" >&2
	exit 1
fi
as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "${1:-start}" in
stop)
	if [ -f "$PG_DIR/data/PG_VERSION" ]; then
		as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
mkdir -p "$PG_DIR"
[ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
	as_pg "$PGBIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 ||
		{ cat "$PG_DIR/initdb.log" >&2; exit 1; }
fi
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
	PG_PORT=$(sed -n 4p "$PG_DIR/data/postmaster.pid")
else
	for _ in $(seq 20); do
		port_busy "$PG_PORT" || break
		PG_PORT=$((PG_PORT + 1))
	done
	as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
		-o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_DIR -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_connections=200" start >/dev/null ||
		{ tail -20 "$PG_DIR/server.log" >&2; exit 1; }
fi
echo "postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
