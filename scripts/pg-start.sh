#!/usr/bin/env bash
# Starts a private PostgreSQL server for the tests (idempotent) and prints
# its URL. Uses Debian's postgresql package (scripts/test-deps.sh installs
# it). The cluster lives in $PG_DIR (default .cache/pg), listens on
# 127.0.0.1:$PG_PORT (default 54329) only, and trusts local connections:
# it is for tests, never for data. It runs with fsync, synchronous_commit and
# full_page_writes off, unless PG_DURABLE=1 (PostgreSQL's durable defaults,
# for benchmarks: bench/peers/pg-durable.sh).
set -euo pipefail
PG_DIR=${PG_DIR:-$(pwd)/.cache/pg}
PG_PORT=${PG_PORT:-54329}
if [ "${PG_DURABLE:-0}" = 1 ]; then durable=on; else durable=off; fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$PGBIN" ]; then
	echo "pg-start: PostgreSQL is not installed (run scripts/test-deps.sh as root)" >&2
	exit 1
fi
as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
mkdir -p "$PG_DIR"
[ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
	as_pg "$PGBIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 ||
		{ cat "$PG_DIR/initdb.log" >&2; exit 1; }
fi
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
	# Already running (an earlier make test): reuse it on its own port.
	PG_PORT=$(sed -n 4p "$PG_DIR/data/postmaster.pid")
else
	# Another server may hold the port (a developer's own PostgreSQL, another
	# checkout's tests): take the next free one.
	for _ in $(seq 20); do
		port_busy "$PG_PORT" || break
		PG_PORT=$((PG_PORT + 1))
	done
	as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
		-o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_DIR -c fsync=$durable -c synchronous_commit=$durable -c full_page_writes=$durable -c max_connections=200" start >/dev/null ||
		{ tail -20 "$PG_DIR/server.log" >&2; exit 1; }
fi
echo "postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
