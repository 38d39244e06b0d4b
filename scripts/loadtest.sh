#!/usr/bin/env bash
# Load benchmark of POST /api (docs/performance.md): a release build on SQLite, local mode, receipts with 10 in-app
# purchases signed by a test root, driven by wrk over loopback.
#
# Usage: scripts/loadtest.sh [DURATION_SECONDS=30] [CONNECTIONS=16] [THREADS=1]
# Prints wrk's report (throughput, latency percentiles) and the server's resident memory sampled every 10 s.
#
# CURRENT_BIN=DIR uses a release build of this commit made elsewhere instead of building one.
# BASELINE_BIN=DIR compares against another build in the same run: DIR holds a `receiptverify` built from another
# commit (for example issue 4's, before quotas and metering). The two are loaded in turn, baseline first, ROUNDS
# times each (default 2), and a summary gives each run's figures and the ratio of the means.
# Needs wrk (installed with apt when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-30}
CONNECTIONS=${2:-16}
THREADS=${3:-1}
ROUNDS=${ROUNDS:-2}
log() { printf '==> %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
    log "installing wrk"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

if [ -n "${CURRENT_BIN:-}" ]; then
    # A release build made elsewhere (a directory holding receiptverify and ReceiptBench of this commit).
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
    rm -rf "$WORK"
}
trap cleanup EXIT

"$CURRENT/ReceiptBench" write-load-fixture "$WORK"

# One load run of the server in directory $1, labelled $2; appends "label req/s p99" to $WORK/summary.
load() {
    local bin=$1 label=$2 run="$WORK/run-$2-$RANDOM"
    mkdir -p "$run"
    export RECEIPTVERIFY_DATABASE_URL="$run/rv.sqlite" RECEIPTVERIFY_MASTER_KEY_FILE="$run/master.key"
    # A plan whose limits the load never reaches, but finite, so the quota arithmetic runs on every call.
    "$bin/receiptverify" plan set load --quota 1000000000000 --rate-limit 10000000 --encrypted true >/dev/null
    "$bin/receiptverify" account create --name Load --email load@example.com --plan load >/dev/null
    local key token port
    key=$("$bin/receiptverify" key create --account load@example.com --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    token=$("$bin/receiptverify" app add --account load@example.com --bundle-id com.example.app --allow-test-data \
        --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

    # One info line per request goes to a file, as in production.
    "$bin/receiptverify" serve --port "$port" --trust-anchors "$WORK/anchors" 2>"$run/serve.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done

    python3 - "$key" "$token" "$WORK/receipt.b64" >"$run/body" <<'PY'
import sys, urllib.parse
print(urllib.parse.urlencode({"apikey": sys.argv[1], "token": sys.argv[2], "receipt": open(sys.argv[3]).read().strip()}), end="")
PY
    cat >"$run/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local f = io.open("$run/body", "rb"); wrk.body = f:read("*a"); f:close()
LUA
    local status
    status=$(curl -s -X POST -H 'Content-Type: application/x-www-form-urlencoded' --data-binary @"$run/body" \
        "http://127.0.0.1:$port/api" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
    [ "$status" = 0 ] || { log "the receipt does not verify (status $status)"; exit 1; }

    log "[$label] warm-up 5 s"
    wrk -t1 -c"$CONNECTIONS" -d5s -s "$run/post.lua" "http://127.0.0.1:$port/api" >/dev/null
    (
        while kill -0 "$SERVER_PID" 2>/dev/null; do
            printf 'rss_kib %s %s\n' "$(date +%s)" "$(ps -o rss= -p "$SERVER_PID" | tr -d ' ')"
            sleep 10
        done
    ) >"$run/rss" &
    local sampler=$!
    log "[$label] load: ${DURATION}s, $CONNECTIONS connections, $THREADS wrk thread(s)"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$run/post.lua" "http://127.0.0.1:$port/api" \
        | tee "$run/wrk"
    kill "$sampler" 2>/dev/null || true
    echo "server resident memory (KiB), every 10 s:"
    awk '{print "  " $3}' "$run/rss" | tr '\n' ' '; echo
    echo "non-200 answers logged: $(grep -v 'http.status=200' "$run/serve.log" | grep -c 'request_id' || true)"
    kill "$SERVER_PID" && wait "$SERVER_PID" || true
    SERVER_PID=
    if [ "$bin" = "$CURRENT" ]; then
        # Every answer of the load was billable: the graceful stop must have flushed them all.
        local counted
        counted=$("$bin/receiptverify" usage --account load@example.com --json \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
        echo "billable calls metered: $counted (status-0 answers logged: $(grep -c 'status=0 ' "$run/serve.log" || true))"
    fi
    printf '%s %s %s\n' "$label" "$(awk '/Requests\/sec/ {print $2}' "$run/wrk")" \
        "$(awk '$1 == "99%" {print $2}' "$run/wrk")" >>"$WORK/summary"
}

if [ -n "${BASELINE_BIN:-}" ]; then
    for _ in $(seq "$ROUNDS"); do
        load "$BASELINE_BIN" baseline
        load "$CURRENT" current
    done
    echo
    echo "summary (label, requests/s, p99):"
    sed 's/^/  /' "$WORK/summary"
    awk '{ sum[$1] += $2; n[$1]++ } END {
        b = sum["baseline"] / n["baseline"]; c = sum["current"] / n["current"];
        printf "  mean baseline %.0f/s, current %.0f/s: current = %.3f x baseline\n", b, c, c / b }' "$WORK/summary"
else
    load "$CURRENT" current
fi
