#!/usr/bin/env bash
# Load benchmark of POST /api against the same server's GET /healthz (docs/performance.md): a release build on
# SQLite, local mode, 8 distinct receipts with 10 in-app purchases each signed by a test root (a connection sends
# them in turn), driven by wrk over loopback.
#
# Usage: scripts/loadtest.sh [DURATION_SECONDS=30] [CONNECTIONS=32] [THREADS=2]
# Each round starts the server, loads /api, then /healthz, for DURATION each, and stops it. The summary gives every
# run's requests/s, p50 and p99, the means, /api ÷ /healthz and p99 ÷ p50, and the server's resident memory.
#
# ROUNDS=N       rounds per build (default 2).
# CURRENT_BIN=DIR uses a release build of this commit made elsewhere (DIR holds receiptverify and ReceiptBench).
# BASELINE_BIN=DIR also loads a `receiptverify` built from another commit, in turn with this one (baseline first in
#                every round), and the summary gives current ÷ baseline.
# PERF=1         records `perf record -g` of the current server during its first /api run (to $WORK/perf.data,
#                kept and reported at the end).
# Needs wrk (installed with apt when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-30}
CONNECTIONS=${2:-32}
THREADS=${3:-2}
ROUNDS=${ROUNDS:-2}
RECEIPTS=8
log() { printf '==> %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
    log "installing wrk"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

if [ -n "${CURRENT_BIN:-}" ]; then
    CURRENT=$CURRENT_BIN
else
    log "building release (scratch .build-release)"
    swift build -c release --product receiptverify --scratch-path .build-release >/dev/null
    swift build -c release --product ReceiptBench --scratch-path .build-release >/dev/null
    CURRENT=.build-release/release
fi

WORK=$(mktemp -d /tmp/receiptverify-load.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    [ -n "${PERF:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

"$CURRENT/ReceiptBench" write-load-fixture "$WORK" "$RECEIPTS"

# Milliseconds of wrk's latency line for percentile $2 in report $1 (wrk prints us, ms or s).
percentile() {
    awk -v p="$2" '$1 == p {
        v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        print (u == "us" ? v / 1000 : u == "s" ? v * 1000 : v) }' "$1"
}

# One-time set-up of a build's database in $WORK/db-LABEL: a plan whose limits the load never reaches (finite, so
# the quota arithmetic runs on every call), an account, a key, an app; the request bodies.
setup() {
    local bin=$1 label=$2 dir="$WORK/db-$2"
    mkdir -p "$dir"
    export RECEIPTVERIFY_DATABASE_URL="$dir/rv.sqlite" RECEIPTVERIFY_MASTER_KEY_FILE="$dir/master.key"
    "$bin/receiptverify" plan set load --quota 1000000000000 --rate-limit 10000000 --encrypted true >/dev/null
    "$bin/receiptverify" account create --name Load --email load@example.com --plan load >/dev/null
    local key token
    key=$("$bin/receiptverify" key create --account load@example.com --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    token=$("$bin/receiptverify" app add --account load@example.com --bundle-id com.example.app --allow-test-data \
        --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
    for index in $(seq 0 $((RECEIPTS - 1))); do
        python3 - "$key" "$token" "$WORK/receipt-$index.b64" >"$dir/body-$index" <<'PY'
import sys, urllib.parse
print(urllib.parse.urlencode({"apikey": sys.argv[1], "token": sys.argv[2], "receipt": open(sys.argv[3]).read().strip()}), end="")
PY
    done
    cat >"$dir/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local bodies = {}
for i = 0, $((RECEIPTS - 1)) do
    local f = io.open("$dir/body-" .. i, "rb"); bodies[#bodies + 1] = f:read("*a"); f:close()
end
local n = 0
request = function()
    n = n % #bodies + 1
    return wrk.format(nil, nil, nil, bodies[n])
end
LUA
}

# One round of build $1 (label $2): start the server, load /api, then /healthz; appends
# "label route requests/s p50 p99" lines to $WORK/summary.
round() {
    local bin=$1 label=$2 dir="$WORK/db-$2" port
    export RECEIPTVERIFY_DATABASE_URL="$dir/rv.sqlite" RECEIPTVERIFY_MASTER_KEY_FILE="$dir/master.key"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # One info line per request goes to a file, as in production.
    "$bin/receiptverify" serve --port "$port" --trust-anchors "$WORK/anchors" 2>>"$dir/serve.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    for index in $(seq 0 $((RECEIPTS - 1))); do
        local status
        status=$(curl -s -X POST -H 'Content-Type: application/x-www-form-urlencoded' \
            --data-binary @"$dir/body-$index" "http://127.0.0.1:$port/api" \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
        [ "$status" = 0 ] || { log "receipt $index does not verify (status $status)"; exit 1; }
    done
    log "[$label] warm-up 5 s"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d5s -s "$dir/post.lua" "http://127.0.0.1:$port/api" >/dev/null
    local rss_before perf_pid=
    rss_before=$(ps -o rss= -p "$SERVER_PID" | tr -d ' ')
    if [ -n "${PERF:-}" ] && [ "$label" = current ] && [ ! -e "$WORK/perf.data" ]; then
        perf record -F 499 -g -o "$WORK/perf.data" -p "$SERVER_PID" -- sleep "$DURATION" 2>/dev/null &
        perf_pid=$!
    fi
    log "[$label] /api: ${DURATION}s, $CONNECTIONS connections, $THREADS wrk thread(s), $RECEIPTS receipts in turn"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$dir/post.lua" "http://127.0.0.1:$port/api" \
        | tee "$WORK/wrk-api"
    [ -n "$perf_pid" ] && wait "$perf_pid" || true
    log "[$label] /healthz: ${DURATION}s"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$port/healthz" \
        | tee "$WORK/wrk-health"
    echo "server resident memory (KiB): $rss_before after warm-up, $(ps -o rss= -p "$SERVER_PID" | tr -d ' ') at the end"
    kill "$SERVER_PID" && wait "$SERVER_PID" || true
    SERVER_PID=
    for route in api health; do
        printf '%s %s %s %s %s\n' "$label" "$route" "$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk-$route")" \
            "$(percentile "$WORK/wrk-$route" 50%)" "$(percentile "$WORK/wrk-$route" 99%)" >>"$WORK/summary"
    done
}

labels=(current)
[ -n "${BASELINE_BIN:-}" ] && labels=(baseline current)
for label in "${labels[@]}"; do
    if [ "$label" = baseline ]; then setup "$BASELINE_BIN" baseline; else setup "$CURRENT" current; fi
done
for _ in $(seq "$ROUNDS"); do
    for label in "${labels[@]}"; do
        if [ "$label" = baseline ]; then round "$BASELINE_BIN" baseline; else round "$CURRENT" current; fi
    done
done

# Every answer was billable: the graceful stops must have flushed them all.
export RECEIPTVERIFY_DATABASE_URL="$WORK/db-current/rv.sqlite" RECEIPTVERIFY_MASTER_KEY_FILE="$WORK/db-current/master.key"
echo "billable calls metered: $("$CURRENT/receiptverify" usage --account load@example.com --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')" \
    "(status-0 answers logged: $(grep -c 'status=0 ' "$WORK/db-current/serve.log" || true))"
echo "non-200 answers logged: $(grep -v 'http.status=200' "$WORK/db-current/serve.log" | grep -c 'request_id' || true)"
echo
echo "summary (label, route, requests/s, p50 ms, p99 ms):"
sed 's/^/  /' "$WORK/summary"
awk '{ key = $1 " " $2; rate[key] += $3; p50[key] += $4; p99[key] += $5; n[key]++ } END {
    split("baseline current", labels, " ");
    for (i = 1; i <= 2; i++) {
        l = labels[i]; a = l " api"; h = l " health";
        if (!n[a]) continue;
        printf "  %s: /api %.0f/s (p50 %.2f ms, p99 %.2f ms, p99/p50 %.1f), /healthz %.0f/s: /api = %.3f x /healthz\n",
            l, rate[a] / n[a], p50[a] / n[a], p99[a] / n[a], p99[a] / p50[a], rate[h] / n[h], rate[a] / rate[h];
    }
    if (n["baseline api"]) printf "  /api: current = %.3f x baseline\n",
        (rate["current api"] / n["current api"]) / (rate["baseline api"] / n["baseline api"]);
}' "$WORK/summary"
if [ -n "${PERF:-}" ] && [ -e "$WORK/perf.data" ]; then
    echo
    echo "profile of the current server's first /api run ($WORK/perf.data), by symbol, self time:"
    perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40
fi
