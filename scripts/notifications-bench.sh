#!/usr/bin/env bash
# Benchmark of App Store Server Notification intake (issue 21, docs/performance.md): a release build, a stream of
# distinct DID_RENEW notifications (each three P-256 signatures: the payload, its signed transaction and renewal
# info; each a new UUID, a new ledger transaction and a status change) posted by wrk to /notifications/{token}, on
# SQLite and on PostgreSQL, against the rate of three bare P-256 verifications on one core measured in the same run
# (ReceiptBench's reference row, before and after). Target: intake ≥ 0.4 × that rate.
#
# Then /api while the outbox drains: the server holds a backlog of webhook events (a receiver that was down comes
# back), and /api's rate on the load fixture's receipts is compared with the same server's with an empty outbox, and
# with the build before (BASE_BIN, if given), in ROUNDS (3) alternating rounds, by their medians. Target: ≥ 0.95 ×.
#
# Usage: scripts/notifications-bench.sh [DURATION_SECONDS=8] [CONNECTIONS=16] [INTAKE_CONNECTIONS=64]
# Intake is loaded with INTAKE_CONNECTIONS (enough for group commits to fill the cores; at 16 it is latency-bound),
# /api with CONNECTIONS.
# CURRENT_BIN=DIR   a release build holding receiptverify and ReceiptBench (default: built into .build-release).
# BASE_BIN=DIR      the build before, for the /api comparison (optional).
# COUNT=N           notifications generated (default 4,000 per second of DURATION; each about 12 KB).
# Needs wrk (installed with apt when missing and run as root), python3, and for PostgreSQL its server binaries.
set -euo pipefail

# Binds the test roots to the app, where the build has test anchors per app (issue 32; the build before had none).
test_anchor() {
    if "$1/receiptverify" app add --help 2>/dev/null | grep -c -- --test-anchor >/dev/null; then
        printf '%s %s' --test-anchor "$WORK/anchors"
    fi
}
cd "$(dirname "$0")/.."
DURATION=${1:-8}
CONNECTIONS=${2:-16}
INTAKE_CONNECTIONS=${3:-64}
COUNT=${COUNT:-$((DURATION * 4000))}
log() { printf '==> %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
    log "installing wrk"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
if [ -n "${CURRENT_BIN:-}" ]; then
    BIN=$CURRENT_BIN
else
    log "building release (scratch .build-release)"
    swift build -c release --product receiptverify --scratch-path .build-release >/dev/null
    swift build -c release --product ReceiptBench --scratch-path .build-release >/dev/null
    BIN=.build-release/release
fi

WORK=$(mktemp -d /tmp/receiptverify-notifications.XXXXXX)
SERVER_PID= RECEIVER_PID= PG_BIN= PG_PORT= PG_DIR=
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    [ -n "$RECEIVER_PID" ] && kill "$RECEIVER_PID" 2>/dev/null && wait "$RECEIVER_PID" 2>/dev/null || true
    [ -n "$PG_DIR" ] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    [ -n "$PG_DIR" ] && rm -rf "$PG_DIR"
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r | head -1 || true)
if [ -x "${PG_BIN:-/nonexistent}/initdb" ]; then
    PG_DIR=$(mktemp -d /tmp/receiptverify-notifications-pg.XXXXXX)
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir "$PG_DIR" postgres
        chown postgres "$PG_DIR"
    fi
    PG_PORT=$(free_port)
    as_pg "$PG_BIN/initdb" -U postgres --auth=trust -D "$PG_DIR/data" >"$PG_DIR/initdb.log" 2>&1
    as_pg "$PG_BIN/pg_ctl" -w -D "$PG_DIR/data" -l "$PG_DIR/server.log" \
        -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    log "PostgreSQL on 127.0.0.1:$PG_PORT"
else
    log "no PostgreSQL server binaries: SQLite only"
fi

log "signing $COUNT notifications"
"$BIN/ReceiptBench" write-notification-fixture "$WORK" "$COUNT"
"$BIN/ReceiptBench" write-load-fixture "$WORK" 8

# reference: three bare P-256 verifications per second on one core (ReceiptBench's reference row).
reference() {
    "$BIN/ReceiptBench" 1 "reference: one P-256" | awk -F' [|] ' '/reference: one P-256/ { printf "%.0f\n", $2 / 3 }'
}

# start_server BIN DATABASE_URL [ARGS...]: a server on a free port; sets PORT, SERVER_PID.
start_server() {
    local bin=$1 url=$2
    shift 2
    PORT=$(free_port)
    RECEIPTVERIFY_DATABASE_URL=$url RECEIPTVERIFY_MASTER_KEY_FILE=$WORK/master.key \
        "$bin/receiptverify" serve --port "$PORT" --trust-anchors "$WORK/anchors" --log-level warning \
        --auth-failures-per-second 0 "$@" >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    log "the server did not start:"; cat "$WORK/server.log" >&2; exit 1
}
stop_server() { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=; }

# setup BIN DATABASE_URL: migrate, an account with a key and an app of the fixtures' bundle ID; sets KEY, TOKEN.
setup() {
    local bin=$1
    export RECEIPTVERIFY_DATABASE_URL=$2 RECEIPTVERIFY_MASTER_KEY_FILE=$WORK/master.key
    # The receiver listens on loopback over plain http (builds before issue 33 ignore this).
    export RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS=on
    "$bin/receiptverify" migrate >/dev/null
    "$bin/receiptverify" plan set load --quota 1000000000000 --rate-limit 10000000 >/dev/null
    "$bin/receiptverify" account create --name Load --email load@example.com --plan load >/dev/null
    KEY=$("$bin/receiptverify" key create --account load@example.com --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    TOKEN=$("$bin/receiptverify" app add --account load@example.com --bundle-id com.example.app --allow-test-data \
        $(test_anchor "$bin") --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
}

cat >"$WORK/notifications.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local next_id, threads = 0, {}
function setup(thread)
    thread:set("id", next_id); next_id = next_id + 1
    table.insert(threads, thread)
end
local bodies, n = {}, 0
function init(args)
    local i = 0
    for line in io.lines("$WORK/notifications.jsonl") do
        if i % 2 == id then bodies[#bodies + 1] = line end
        i = i + 1
    end
    wrapped = 0
end
function request()
    n = n + 1
    if n > #bodies then n = 1; wrapped = wrapped + 1 end
    return wrk.format(nil, nil, nil, bodies[n])
end
LUA

# intake LABEL DATABASE_URL: notifications per second recorded, from the server's own counts.
intake() {
    local label=$1 url=$2
    setup "$BIN" "$url"
    start_server "$BIN" "$url"
    wrk -t2 -c"$INTAKE_CONNECTIONS" -d"${DURATION}s" -s "$WORK/notifications.lua" \
        "http://127.0.0.1:$PORT/notifications/$TOKEN" >"$WORK/wrk-$label.txt"
    local metrics recorded duplicates others
    metrics=$(curl -s "http://127.0.0.1:$PORT/metrics")
    recorded=$(echo "$metrics" | awk '/^receiptverify_notifications_total/ && /outcome="recorded"/ { s += $2 } END { print s + 0 }')
    duplicates=$(echo "$metrics" | awk '/^receiptverify_notifications_total/ && /outcome="duplicate"/ { s += $2 } END { print s + 0 }')
    others=$(echo "$metrics" | awk '/^receiptverify_notifications_total/ && !/outcome="(recorded|duplicate)"/ { s += $2 } END { print s + 0 }')
    stop_server
    local rate
    rate=$(awk -v r="$recorded" -v d="$DURATION" 'BEGIN { printf "%.0f", r / d }')
    log "$label: $recorded recorded, $duplicates duplicates (stream wrapped), $others refused: $rate/s"
    echo "$rate"
}

REF1=$(reference)
log "reference: three P-256 verifications, $REF1/s"
SQLITE=$(intake sqlite "$WORK/intake.sqlite")
POSTGRES=
if [ -n "$PG_DIR" ]; then
    as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres intake
    POSTGRES=$(intake postgres "postgres://postgres@127.0.0.1:$PG_PORT/intake?sslmode=disable")
fi
REF2=$(reference)
REF=$(( (REF1 + REF2) / 2 ))

# /api while the outbox drains.
cat >"$WORK/api.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local bodies, n = {}, 0
function init(args)
    for i = 0, 7 do
        local f = io.open(os.getenv("BODIES") .. "/api-body-" .. i, "rb"); bodies[#bodies + 1] = f:read("*a"); f:close()
    end
end
function request()
    n = n % #bodies + 1
    return wrk.format(nil, nil, nil, bodies[n])
end
LUA
# api_bodies DIR: the /api request bodies of the current KEY and TOKEN, in DIR.
api_bodies() {
    mkdir -p "$1"
    python3 - "$KEY" "$TOKEN" "$WORK" "$1" <<'PY'
import sys, urllib.parse
key, token, work, out = sys.argv[1:5]
for index in range(8):
    receipt = open(f"{work}/receipt-{index}.b64").read().strip()
    open(f"{out}/api-body-{index}", "w").write(urllib.parse.urlencode({"apikey": key, "token": token, "receipt": receipt}))
PY
}
# api_rate BIN DATABASE BODIES: /api requests a second on a server of BIN over DATABASE, after a warm-up.
api_rate() {
    start_server "$1" "$2"
    for _ in 1 2 3; do curl -s -o /dev/null -X POST --data-binary @"$3/api-body-0" "http://127.0.0.1:$PORT/api"; done
    BODIES=$3 wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$WORK/api.lua" "http://127.0.0.1:$PORT/api" \
        | awk '/Requests\/sec/ { printf "%.0f", $2 }'
    stop_server
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
RECEIVER_PORT=$(free_port)
# receiver: a customer's webhook receiver on loopback, as cheap as can be (asyncio, 204 to every POST), so that it takes
# little of the two cores the server is measured on.
receiver() {
    python3 - "$RECEIVER_PORT" >"$WORK/receiver.log" 2>&1 <<'PY' &
import asyncio, sys
class Receiver(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""
    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            self.transport.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
async def main():
    server = await asyncio.get_running_loop().create_server(Receiver, "127.0.0.1", int(sys.argv[1]))
    await server.serve_forever()
asyncio.run(main())
PY
    RECEIVER_PID=$!
}

# Two copies of one database (same key and app, an endpoint at the receiver): one idle, one that takes a backlog of
# deliveries while the receiver is down. ROUNDS rounds then load /api on each in turn (and on the build before), and
# the medians are compared: one backlog lasts them all at the default pacing.
ROUNDS=${ROUNDS:-3}
rm -f "$WORK/drain.sqlite"*
setup "$BIN" "$WORK/drain.sqlite"
api_bodies "$WORK/current"
"$BIN/receiptverify" webhooks add --app "$TOKEN" --url "http://127.0.0.1:$RECEIVER_PORT/hook" >/dev/null
for file in "$WORK/drain.sqlite"*; do cp "$file" "$WORK/idle.sqlite${file#"$WORK/drain.sqlite"}"; done
start_server "$BIN" "$WORK/drain.sqlite" --webhook-retry-seconds 1
wrk -t2 -c"$CONNECTIONS" -d2s -s "$WORK/notifications.lua" "http://127.0.0.1:$PORT/notifications/$TOKEN" >/dev/null
stop_server
BACKLOG=$(sqlite3 "$WORK/drain.sqlite" "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'" 2>/dev/null || echo "?")
if [ -n "${BASE_BIN:-}" ]; then
    rm -f "$WORK/base.sqlite"*
    setup "$BASE_BIN" "$WORK/base.sqlite"
    api_bodies "$WORK/base"
fi
receiver
IDLES=() DRAININGS=() BASES=()
for round in $(seq "$ROUNDS"); do
    IDLES+=("$(api_rate "$BIN" "$WORK/idle.sqlite" "$WORK/current")")
    DRAININGS+=("$(api_rate "$BIN" "$WORK/drain.sqlite" "$WORK/current")")
    [ -n "${BASE_BIN:-}" ] && BASES+=("$(api_rate "$BASE_BIN" "$WORK/base.sqlite" "$WORK/base")")
    log "round $round: /api idle ${IDLES[-1]}/s, draining ${DRAININGS[-1]}/s${BASE_BIN:+, build before ${BASES[-1]}/s}"
done
IDLE=$(median "${IDLES[@]}")
DRAINING=$(median "${DRAININGS[@]}")
BASE=
[ -n "${BASE_BIN:-}" ] && BASE=$(median "${BASES[@]}")
LEFT=$(sqlite3 "$WORK/drain.sqlite" "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'" 2>/dev/null || echo "?")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "") printf "%.2f", a / b; else print "-" }'; }
echo
echo "| measure | per second | ratio |"
echo "|---|---|---|"
echo "| three bare P-256 verifications (one core; $REF1, $REF2) | $REF | 1 |"
echo "| intake, SQLite | $SQLITE | $(ratio "$SQLITE" "$REF") |"
[ -n "$POSTGRES" ] && echo "| intake, PostgreSQL | $POSTGRES | $(ratio "$POSTGRES" "$REF") |"
echo "| /api, empty outbox (median of ${IDLES[*]}) | $IDLE | 1 |"
echo "| /api while $BACKLOG deliveries drain ($LEFT left; median of ${DRAININGS[*]}) | $DRAINING | $(ratio "$DRAINING" "$IDLE") |"
[ -n "$BASE" ] && echo "| /api, the build before (BASE_BIN; median of ${BASES[*]}) | $BASE | draining ÷ before: $(ratio "$DRAINING" "$BASE") |"
exit 0
