#!/usr/bin/env bash
# Stops the private PostgreSQL server scripts/pg-start.sh started in $PG_DIR
# (default .cache/pg), if it runs. Its data stays for the next start.
set -euo pipefail
PG_DIR=${PG_DIR:-$(pwd)/.cache/pg}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] && [ -f "$PG_DIR/data/PG_VERSION" ] || exit 0
as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
	as_pg "$PGBIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 60 stop >/dev/null
fi
