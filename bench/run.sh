#!/usr/bin/env bash
# bench/run.sh — GetItem / PutItem / Query benchmark of quarry against
# dynalite and moto_server on this machine, in one run, with the null
# server (ddbbench -null-listen: no storage, precomputed answers) as the
# ceiling any server could reach here; results appended to bench/RESULTS.md.
#
# Usage: bench/run.sh [extra ddbbench flags...]
# Environment:
#   DURATION (5s), ROUNDS (3), CONCURRENCY (16), OUT (bench/RESULTS.md):
#     each round measures every operation on every target for DURATION.
#   RATE (unset): open loop at RATE requests/s in all instead of as fast as
#     the clients go, to compare latencies at a load every target carries.
#   DYNALITE_PORT (4567), QUARRY_PORT (8000), NULL_PORT (8100): the next
#     free port is used when one is taken.
#   PEERS (PEERS_DIR when set, as `make bench` sets it to .cache/peers, a
#     git-ignored directory; else /tmp/peers): where dynalite (and moto when
#     the python on PATH lacks it) is installed, never in tracked files.
#   QUARRY_MODE: "cli" (go build ./cmd/quarry, then `quarry ddb serve`) or
#     "embedded" (ddbbench -embedded); default: cli when cmd/quarry exists.
#   NULL_TARGET (1): 0 leaves out the null server (target "null").
#   NULL_RAW_TARGET (0): 1 adds the raw null server (target "null-raw",
#     ddbbench -null-listen -null-raw): the null server's answers through a
#     minimal HTTP/1.1 loop instead of net/http, to see what net/http costs.
#   NOSYNC_TARGET (1): 0 leaves out the second quarry, started with
#     --ddb-sync=false (target "quarry-nosync"): like dynalite, which keeps
#     everything in memory, it does not fsync; its writes still survive a
#     crash of the process.
#   FASTHTTP_TARGET (0): 1 adds the store served through valyala/fasthttp
#     instead of net/http (target "quarry-fasthttp", bench/peers/fasthttp,
#     a nested module; fsync on like quarry), the HTTP-layer trial of
#     issue #19.
#   MOTO_TARGET (1): 0 leaves out moto_server (target "moto": moto
#     MOTO_VERSION with its server extra, the DynamoDB mock LocalStack and
#     many Python users run; in-memory). The python3 on PATH (PYTHON) is
#     used when it has that moto; otherwise `pip install --target` puts it
#     in $PEERS/moto-MOTO_VERSION, outside the repository. When neither
#     works the target is skipped with a message and the run goes on.
#   BASE_REV (unset): a git revision; adds `quarry ddb serve` built from it
#     (target "quarry-base", git archive into the run's temporary
#     directory), to compare a change with its base in the same run.
#   GOFLAGS is passed to go as usual.
#
# Everything listens on 127.0.0.1 only; all servers are stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-16}
OUT=${OUT:-bench/RESULTS.md}
PEERS=${PEERS:-${PEERS_DIR:-/tmp/peers}}
DYNALITE_VERSION=4.0.0
if [[ -z ${QUARRY_MODE:-} ]]; then
	if [[ -d cmd/quarry ]]; then QUARRY_MODE=cli; else QUARRY_MODE=embedded; fi
fi
NULL_TARGET=${NULL_TARGET:-1}
NOSYNC_TARGET=${NOSYNC_TARGET:-1}
NULL_RAW_TARGET=${NULL_RAW_TARGET:-0}
FASTHTTP_TARGET=${FASTHTTP_TARGET:-0}
BASE_REV=${BASE_REV:-}
MOTO_TARGET=${MOTO_TARGET:-1}
MOTO_VERSION=${MOTO_VERSION:-5.2.1}
PYTHON=${PYTHON:-python3}

WORK=$(mktemp -d /tmp/ddbbench-run.XXXXXX)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

log() { echo "run.sh: $*" >&2; }

# quote ARGS...: the arguments as a shell would need them, quoting only when
# necessary.
quote() {
	local out=() a
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=,@+%-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
	done
	echo "${out[*]}"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
	local p=$1
	for _ in $(seq 1 100); do
		if ! port_busy "$p"; then
			echo "$p"
			return
		fi
		p=$((p + 1))
	done
	log "no free port near $1"
	exit 1
}

# wait_port PORT NAME PID: wait up to 60 s for the server to accept connections.
wait_port() {
	for _ in $(seq 1 600); do
		if port_busy "$1"; then return 0; fi
		if ! kill -0 "$3" 2>/dev/null; then
			log "$2 exited before listening; its log:"
			cat "$WORK/$2.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	log "$2 not listening on 127.0.0.1:$1 after 60 s"
	exit 1
}

# 1. dynalite, installed outside the repository.
if [[ "$(node -p "require('$PEERS/node_modules/dynalite/package.json').version" 2>/dev/null)" != "$DYNALITE_VERSION" ]]; then
	log "installing dynalite@$DYNALITE_VERSION into $PEERS"
	mkdir -p "$PEERS"
	npm install --prefix "$PEERS" --no-audit --no-fund "dynalite@$DYNALITE_VERSION" >&2
fi
DYNALITE_PORT=$(free_port "${DYNALITE_PORT:-4567}")
node "$PEERS/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$DYNALITE_PORT" \
	--createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$WORK/dynalite.log" 2>&1 &
PIDS+=($!)
DYNALITE_PID=$!
log "dynalite $DYNALITE_VERSION (pid $DYNALITE_PID) on 127.0.0.1:$DYNALITE_PORT"

# start_target NAME PORT COMMAND...: runs COMMAND (a server that listens on
# 127.0.0.1:PORT) in the background, waits until it accepts connections and
# adds it to the targets, with its pid for the CPU figures.
start_target() {
	local name=$1 port=$2 pid
	shift 2
	"$@" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	pid=$!
	log "$name (pid $pid) on 127.0.0.1:$port"
	wait_port "$port" "$name" "$pid"
	grep -m1 "listening on" "$WORK/$name.log" >&2 || true
	TARGETS+=("$name=http://127.0.0.1:$port")
	PIDS_ARG+=("$name=$pid")
}

# 2. quarry.
go build -o "$WORK/ddbbench" ./bench/ddbbench
TARGETS=()
PIDS_ARG=()
MODE_FLAGS=()
if [[ $QUARRY_MODE == cli ]]; then
	go build -o "$WORK/quarry" ./cmd/quarry
	QUARRY_PORT=$(free_port "${QUARRY_PORT:-8000}")
	start_target quarry "$QUARRY_PORT" "$WORK/quarry" ddb serve --listen "127.0.0.1:$QUARRY_PORT" --data-dir "$WORK/quarry-data"
	QUARRY_DESC="quarry: \`quarry ddb serve\` built from this tree (go build ./cmd/quarry), fresh data dir, default options (fsync on commit)"
	if [[ $NOSYNC_TARGET != 0 ]]; then
		NOSYNC_PORT=$(free_port "${NOSYNC_PORT:-8010}")
		start_target quarry-nosync "$NOSYNC_PORT" "$WORK/quarry" ddb serve --listen "127.0.0.1:$NOSYNC_PORT" --data-dir "$WORK/quarry-nosync-data" --ddb-sync=false
		QUARRY_DESC+="; quarry-nosync: the same with --ddb-sync=false (no fsync, like dynalite, which keeps everything in memory; acknowledged writes still survive kill -9)"
	fi
	if [[ -n $BASE_REV ]]; then
		base_commit=$(git rev-parse --short "$BASE_REV^{commit}")
		mkdir -p "$WORK/base"
		git archive "$base_commit" | tar -x -C "$WORK/base"
		(cd "$WORK/base" && go build -o "$WORK/quarry-base" ./cmd/quarry)
		BASE_PORT=$(free_port "${BASE_PORT:-8030}")
		start_target quarry-base "$BASE_PORT" "$WORK/quarry-base" ddb serve --listen "127.0.0.1:$BASE_PORT" --data-dir "$WORK/quarry-base-data"
		QUARRY_DESC+="; quarry-base: the same built from commit $base_commit (BASE_REV=$BASE_REV)"
	fi
else
	MODE_FLAGS=(-embedded)
	QUARRY_DESC="quarry: cmd/quarry missing, so ddbbench -embedded serves a fresh store (default options, fsync on commit) inside the bench process"
fi

if [[ $FASTHTTP_TARGET == 1 ]]; then
	(cd bench/peers/fasthttp && go build -o "$WORK/ddbfasthttp" .)
	FASTHTTP_PORT=$(free_port "${FASTHTTP_PORT:-8020}")
	start_target quarry-fasthttp "$FASTHTTP_PORT" "$WORK/ddbfasthttp" -listen "127.0.0.1:$FASTHTTP_PORT" -data-dir "$WORK/quarry-fasthttp-data"
	QUARRY_DESC+="; quarry-fasthttp: the same store (default options, fsync on commit) served through valyala/fasthttp v1.78.0 instead of net/http (bench/peers/fasthttp, ddb.ServeTrustedWire)"
fi

# 3. The null server: ddbbench -null-listen, its answers shaped by the same
# -table, -item-bytes and -page as the run (taken from the extra arguments).
NULL_DESC=""
if [[ $NULL_TARGET != 0 ]]; then
	NULL_FLAGS=()
	args=("$@")
	for ((i = 0; i < ${#args[@]}; i++)); do
		case ${args[i]} in
		-table=* | --table=* | -item-bytes=* | --item-bytes=* | -page=* | --page=*) NULL_FLAGS+=("${args[i]}") ;;
		-table | --table | -item-bytes | --item-bytes | -page | --page)
			NULL_FLAGS+=("${args[i]}" "${args[i + 1]:-}")
			i=$((i + 1))
			;;
		esac
	done
	NULL_PORT=$(free_port "${NULL_PORT:-8100}")
	start_target null "$NULL_PORT" "$WORK/ddbbench" -null-listen "127.0.0.1:$NULL_PORT" "${NULL_FLAGS[@]}"
	NULL_DESC="; null: \`ddbbench -null-listen\` built from this tree, a DynamoDB-wire HTTP server (Go net/http, HTTP/1.1 keep-alive) that stores nothing and answers every request with precomputed bytes, so its throughput is the floor cost of HTTP plus the clients on this machine and null/dynalite is the highest ratio any server could show here"
	if [[ $NULL_RAW_TARGET == 1 ]]; then
		NULL_RAW_PORT=$(free_port "${NULL_RAW_PORT:-8110}")
		start_target null-raw "$NULL_RAW_PORT" "$WORK/ddbbench" -null-listen "127.0.0.1:$NULL_RAW_PORT" -null-raw "${NULL_FLAGS[@]}"
		NULL_DESC+="; null-raw: the same answers through a minimal HTTP/1.1 loop (ddbbench -null-raw) instead of net/http, so null minus null-raw is what net/http costs per request"
	fi
fi
wait_port "$DYNALITE_PORT" dynalite "$DYNALITE_PID"
TARGETS+=("dynalite=http://127.0.0.1:$DYNALITE_PORT")
PIDS_ARG+=("dynalite=$DYNALITE_PID")

# 4. moto_server, from the python on PATH when it has moto $MOTO_VERSION
# with Flask (the server extra), else installed under $PEERS.
MOTO_DESC=""
moto_ok() { PYTHONPATH=$1 "$PYTHON" -c "import sys, flask, moto; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; }
if [[ $MOTO_TARGET != 0 ]]; then
	MOTO_PATH=""
	if ! moto_ok ""; then
		MOTO_PATH="$PEERS/moto-$MOTO_VERSION"
		if ! moto_ok "$MOTO_PATH"; then
			log "installing moto[server]==$MOTO_VERSION into $MOTO_PATH"
			"$PYTHON" -m pip install --quiet --disable-pip-version-check --target "$MOTO_PATH" "moto[server]==$MOTO_VERSION" >&2 || true
		fi
	fi
	if moto_ok "$MOTO_PATH"; then
		MOTO_PORT=$(free_port "${MOTO_PORT:-5000}")
		start_target moto "$MOTO_PORT" env PYTHONPATH="$MOTO_PATH" "$PYTHON" -m moto.server -H 127.0.0.1 -p "$MOTO_PORT"
		MOTO_DESC="; moto: moto_server $MOTO_VERSION ($("$PYTHON" --version 2>&1), \`python -m moto.server\`, in-memory)"
	else
		log "skipping target moto: moto[server] $MOTO_VERSION is not importable by $PYTHON and could not be installed into $PEERS/moto-$MOTO_VERSION (set MOTO_TARGET=0 to silence this)"
	fi
fi

# 5. The benchmark.
NOTE="dynalite $DYNALITE_VERSION on node $(node --version) (in-memory)$MOTO_DESC; $QUARRY_DESC$NULL_DESC; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' + uncommitted changes')"
join() {
	local IFS=,
	echo "$*"
}
ARGS=(-targets "$(join "${TARGETS[@]}")" -pids "$(join "${PIDS_ARG[@]}")" "${MODE_FLAGS[@]}" -duration "$DURATION" -rounds "$ROUNDS" -concurrency "$CONCURRENCY" -out "$OUT")
ENV_REC=(DURATION="$DURATION" ROUNDS="$ROUNDS" CONCURRENCY="$CONCURRENCY")
if [[ -n ${RATE:-} ]]; then
	ARGS+=(-rate "$RATE")
	ENV_REC+=(RATE="$RATE")
fi
if [[ $NULL_TARGET == 0 ]]; then ENV_REC+=(NULL_TARGET=0); fi
if [[ $NOSYNC_TARGET == 0 ]]; then ENV_REC+=(NOSYNC_TARGET=0); fi
if [[ $NULL_RAW_TARGET == 1 ]]; then ENV_REC+=(NULL_RAW_TARGET=1); fi
if [[ $FASTHTTP_TARGET == 1 ]]; then ENV_REC+=(FASTHTTP_TARGET=1); fi
if [[ $MOTO_TARGET == 0 ]]; then ENV_REC+=(MOTO_TARGET=0); fi
if [[ -n $BASE_REV ]]; then ENV_REC+=(BASE_REV="$BASE_REV"); fi
"$WORK/ddbbench" "${ARGS[@]}" \
	-command "$(quote env "${ENV_REC[@]}" bench/run.sh "$@") → ddbbench $(quote "${ARGS[@]}" "$@")" \
	-note "$NOTE" "$@"
