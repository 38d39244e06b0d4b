#!/usr/bin/env bash
# Load benchmark of POST /api (docs/performance.md): a release build on SQLite, local mode, receipts with 10 in-app
# purchases signed by a test root, driven by wrk over loopback.
#
# Usage: scripts/loadtest.sh [DURATION_SECONDS=30] [CONNECTIONS=16] [THREADS=1]
# Prints wrk's report (throughput, latency percentiles) and the server's resident memory sampled every 10 s.
# Needs wrk (installed with apt when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-30}
CONNECTIONS=${2:-16}
THREADS=${3:-1}
log() { printf '==> %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
    log "installing wrk"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi

log "building release (scratch .build-release)"
swift build -c release --product receiptverify --scratch-path .build-release >/dev/null
swift build -c release --product ReceiptBench --scratch-path .build-release >/dev/null
BIN=.build-release/release

WORK=$(mktemp -d /tmp/receiptverify-load.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

export RECEIPTVERIFY_DATABASE_URL="$WORK/rv.sqlite" RECEIPTVERIFY_MASTER_KEY_FILE="$WORK/master.key"
"$BIN/ReceiptBench" write-load-fixture "$WORK"
"$BIN/receiptverify" account create --name Load --email load@example.com --plan enterprise >/dev/null
KEY=$("$BIN/receiptverify" key create --account load@example.com --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
TOKEN=$("$BIN/receiptverify" app add --account load@example.com --bundle-id com.example.app --allow-test-data --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# One info line per request goes to a file, as in production.
"$BIN/receiptverify" serve --port "$PORT" --trust-anchors "$WORK/anchors" 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

python3 - "$KEY" "$TOKEN" "$WORK/receipt.b64" >"$WORK/body" <<'PY'
import sys, urllib.parse
print(urllib.parse.urlencode({"apikey": sys.argv[1], "token": sys.argv[2], "receipt": open(sys.argv[3]).read().strip()}), end="")
PY
cat >"$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local f = io.open("$WORK/body", "rb"); wrk.body = f:read("*a"); f:close()
LUA
STATUS=$(curl -s -X POST -H 'Content-Type: application/x-www-form-urlencoded' --data-binary @"$WORK/body" \
    "http://127.0.0.1:$PORT/api" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
[ "$STATUS" = 0 ] || { log "the receipt does not verify (status $STATUS)"; exit 1; }

log "warm-up 5 s"
wrk -t1 -c"$CONNECTIONS" -d5s -s "$WORK/post.lua" "http://127.0.0.1:$PORT/api" >/dev/null
(
    while kill -0 "$SERVER_PID" 2>/dev/null; do
        printf 'rss_kib %s %s\n' "$(date +%s)" "$(ps -o rss= -p "$SERVER_PID" | tr -d ' ')"
        sleep 10
    done
) >"$WORK/rss" &
SAMPLER=$!
log "load: ${DURATION}s, $CONNECTIONS connections, $THREADS wrk thread(s)"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$WORK/post.lua" "http://127.0.0.1:$PORT/api"
kill "$SAMPLER" 2>/dev/null || true
echo "server resident memory (KiB), every 10 s:"
awk '{print "  " $3}' "$WORK/rss" | tr '\n' ' '; echo
echo "non-200 answers logged: $(grep -c 'http.status=200' "$WORK/serve.log" >/dev/null; grep -v 'http.status=200' "$WORK/serve.log" | grep -c 'request_id' || true)"
