#!/usr/bin/env bash
# Benchmark of enriched /api answers (issue 20, docs/performance.md): a release build on SQLite, local mode, the load
# fixture's 8 receipts (scripts/loadtest.sh), and a stand-in for Apple's App Store Server API on loopback (Python,
# answering with JWS signed by a test root, counting when each request came).
#
# 1. Ratio: one server, two apps of one account, in turn: without enrichment, and with enrichment on a warm cache
#    (every receipt is the same customer's, so Apple is asked once per --storekit-cache-seconds). The summary gives
#    enriched ÷ plain requests/s (target ≥ 0.8).
# 2. Budget: the server again with the cache off (every call asks Apple twice: history and statuses) and a budget of
#    BUDGET requests/s; a burst of CONNECTIONS clients for DURATION seconds; the stand-in reports the most requests
#    it received in any one-second window (target ≤ BUDGET + 1: a closed window can hold a turn at each end).
#
# Usage: scripts/storekit-bench.sh [DURATION_SECONDS=15] [CONNECTIONS=32]
# CURRENT_BIN=DIR   a release build holding receiptverify and ReceiptBench (default: built into .build-release).
# ROUNDS=N          ratio rounds (default 2). BUDGET=N the budget of phase 2 (default 10).
# PERF=1            profiles the server (perf record) during round 1 of each app and prints the top symbols.
# Needs wrk (installed with apt when missing and run as root) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-15}
CONNECTIONS=${2:-32}
ROUNDS=${ROUNDS:-2}
BUDGET=${BUDGET:-10}
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

WORK=$(mktemp -d /tmp/receiptverify-storekit.XXXXXX)
SERVER_PID= FAKE_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null && wait "$FAKE_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$BIN/ReceiptBench" write-load-fixture "$WORK" 8
"$BIN/ReceiptBench" write-storekit-fixture "$WORK"

# The stand-in: history and statuses for any id, /stats for the count and the busiest one-second window.
FAKE_PORT=$(free_port)
python3 - "$WORK" "$FAKE_PORT" >"$WORK/fake.log" 2>&1 <<'PY' &
import bisect, http.server, json, sys, threading, time
work, port = sys.argv[1], int(sys.argv[2])
history = open(f"{work}/storekit-history.json", "rb").read()
statuses = open(f"{work}/storekit-statuses.json", "rb").read()
arrivals, lock = [], threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path.startswith("/stats"):
            with lock:
                times = sorted(arrivals)
            busiest = max((bisect.bisect_right(times, t + 1.0) - i for i, t in enumerate(times)), default=0)
            return self.answer(200, json.dumps({"requests": len(times), "busiest_second": busiest}).encode())
        if self.path.startswith("/reset"):
            with lock:
                arrivals.clear()
            return self.answer(200, b"{}")
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            return self.answer(401, b"")
        with lock:
            arrivals.append(time.monotonic())
        if "/inApps/v2/history/" in self.path:
            return self.answer(200, history)
        if "/inApps/v1/subscriptions/" in self.path:
            return self.answer(200, statuses)
        return self.answer(404, b'{"errorCode":4040010}')

http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
FAKE_PID=$!
FAKE=http://127.0.0.1:$FAKE_PORT

export RECEIPTVERIFY_DATABASE_URL=$WORK/rv.sqlite RECEIPTVERIFY_MASTER_KEY_FILE=$WORK/master.key
rv() { "$BIN/receiptverify" "$@"; }
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
rv migrate >/dev/null
rv plan set load --quota 1000000000000 --rate-limit 10000000 --encrypted true >/dev/null
rv account create --name Load --email load@example.com --plan load >/dev/null
KEY=$(rv key create --account load@example.com --json | json key)
PLAIN=$(rv app add --account load@example.com --bundle-id com.example.app --allow-test-data --test-anchor "$WORK/anchors" --share-bundle-id --json \
    | json token)
ENRICHED=$(rv app add --account load@example.com --bundle-id com.example.app --allow-test-data --test-anchor "$WORK/anchors" --share-bundle-id \
    --apple-issuer-id 5a6f1c3e-8d2b-4c7a-9e0f-1b2c3d4e5f60 --apple-key-id ABC123DEFG \
    --apple-private-key-file "$WORK/apple-key.p8" --enrichment on --json | json token)
for app in plain enriched; do
    token=$PLAIN; [ "$app" = enriched ] && token=$ENRICHED
    python3 - "$KEY" "$token" "$WORK" "$app" <<'PY'
import sys, urllib.parse
key, token, work, app = sys.argv[1:5]
with open(f"{work}/{app}.lua", "w") as script:
    bodies = []
    for index in range(8):
        receipt = open(f"{work}/receipt-{index}.b64").read().strip()
        bodies.append(urllib.parse.urlencode({"apikey": key, "token": token, "receipt": receipt}))
    script.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\n')
    script.write("local bodies = {" + ",".join(f"[[{body}]]" for body in bodies) + "}\nlocal n = 0\n")
    script.write("function request()\n  n = n % #bodies + 1\n  return wrk.format(nil, nil, nil, bodies[n])\nend\n")
    open(f"{work}/{app}-body", "w").write(bodies[0])
PY
done

# serve ARGS...: starts the server against the stand-in; sets PORT.
serve() {
    PORT=$(free_port)
    "$BIN/receiptverify" serve --port "$PORT" --trust-anchors "$WORK/anchors" --storekit-production-url "$FAKE" \
        --storekit-sandbox-url "$FAKE" "$@" 2>>"$WORK/serve.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
}
stop() { kill "$SERVER_PID" && wait "$SERVER_PID" || true; SERVER_PID=; }
rate() { awk '/Requests\/sec/ {print $2}' "$1"; }

log "phase 1: /api without and with enrichment (warm cache), ${DURATION}s each, $CONNECTIONS connections"
serve
enrichment=$(curl -s -X POST --data-binary @"$WORK/enriched-body" -H 'Content-Type: application/x-www-form-urlencoded' \
    "http://127.0.0.1:$PORT/api" | json enrichment)
[ "$enrichment" = applied ] || { log "the enriched app's answer says enrichment: $enrichment"; exit 1; }
for app in plain enriched; do wrk -t2 -c"$CONNECTIONS" -d5s -s "$WORK/$app.lua" "http://127.0.0.1:$PORT/api" >/dev/null; done
: >"$WORK/summary"
for round in $(seq "$ROUNDS"); do
    for app in plain enriched; do
        perf_pid=
        if [ -n "${PERF:-}" ] && [ "$round" = 1 ]; then
            perf record -F 499 -g -o "$WORK/perf-$app.data" -p "$SERVER_PID" -- sleep "$DURATION" 2>/dev/null &
            perf_pid=$!
        fi
        wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$WORK/$app.lua" "http://127.0.0.1:$PORT/api" \
            >"$WORK/wrk-$app"
        [ -z "$perf_pid" ] || wait "$perf_pid" || true
        echo "$round $app $(rate "$WORK/wrk-$app")" | tee -a "$WORK/summary"
    done
done
asked=$(curl -s "$FAKE/stats" | json requests)
stop

log "phase 2: the cache off, a budget of $BUDGET requests/s, a burst of $CONNECTIONS clients for ${DURATION}s"
curl -s "$FAKE/reset" >/dev/null
serve --storekit-cache-seconds 0 --storekit-requests-per-second "$BUDGET" --storekit-sandbox-requests-per-second 1
wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$WORK/enriched.lua" "http://127.0.0.1:$PORT/api" >"$WORK/wrk-burst"
stats=$(curl -s "$FAKE/stats")
metrics=$(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^receiptverify_storekit_(requests|cache)_total' || true)
stop

echo
echo "phase 1 (requests/s):"
cat "$WORK/summary"
python3 - "$WORK/summary" "$asked" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
mean = lambda app: sum(float(r[2]) for r in rows if r[1] == app) / max(1, sum(1 for r in rows if r[1] == app))
plain, enriched = mean("plain"), mean("enriched")
print(f"mean plain {plain:.0f}/s, enriched {enriched:.0f}/s: enriched / plain = {enriched / plain:.2f} (target >= 0.8)")
print(f"requests to the stand-in during phase 1: {sys.argv[2]}")
PY
echo "phase 2: /api $(rate "$WORK/wrk-burst")/s; the stand-in: $stats (budget $BUDGET/s: at most $((BUDGET + 1)) in any closed one-second window)"
echo "$metrics"
if [ -n "${PERF:-}" ]; then
    for app in plain enriched; do
        echo; echo "perf, $app (self time, top 40):"
        perf report -i "$WORK/perf-$app.data" --stdio --no-children --sort symbol -g none 2>/dev/null \
            | grep -E '^ +[0-9.]+%' | head -40 || true
    done
fi
