#!/usr/bin/env bash
# Exports and imports at scale (docs/performance.md, "Exports" and "Imports"): ROWS ledger rows (default 1,000,000)
# written straight into a fresh database for one app, then exported as JSON Lines twice, a tenth of them (`--limit`)
# and all of them, by `receiptverify export` (peak memory from /usr/bin/time) and by `GET /api/export` (the server's
# resident memory sampled every 0.1 s while it streams). Memory is flat when the two runs' peaks are close while the
# second exports ten times the rows.
# Then `receiptverify customers import` of IMPORTS original transactions (default 2,000; three signed periods each,
# from a stand-in for Apple's Transaction History on loopback, ReceiptBench write-import-fixture) into that app and,
# alternating, into an app of the same account with an empty ledger: imports per second of each and their ratio
# (a full ledger ÷ an empty one), then again (all known) and resumed with --skip-known (all skipped).
# Also on PostgreSQL when BENCH_POSTGRES_URL names an empty database the bench may fill.
#
# Usage: scripts/export-bench.sh [BIN_DIR]    (default: swift build --show-bin-path; build with -c release to
# measure speed; BIN_DIR must hold ReceiptBench too). Environment: ROWS, IMPORTS, BENCH_POSTGRES_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${1:-$(swift build --show-bin-path)}
RV=$BIN_DIR/receiptverify
[ -x "$RV" ] || { echo "no receiptverify at $RV" >&2; exit 1; }
ROWS=${ROWS:-1000000}
IMPORTS=${IMPORTS:-2000}
[ -x "$BIN_DIR/ReceiptBench" ] || { echo "no ReceiptBench in $BIN_DIR (swift build --product ReceiptBench)" >&2; exit 1; }
TENTH=$((ROWS / 10))
TMP=$(mktemp -d /tmp/receiptverify-export-bench.XXXXXX)
SERVER_PID=
FAKE_PID=
cleanup() {
    # (wait answers 143 for a process it killed: not the bench's status.)
    { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; } || true
    { [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null && wait "$FAKE_PID" 2>/dev/null; } || true
    rm -rf "$TMP"
}
trap cleanup EXIT
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
export RECEIPTVERIFY_MASTER_KEY_FILE=$TMP/master.key

# The stand-in for Apple's Transaction History: each original transaction's history of the fixture by its id, a
# 4040010 for any other.
"$BIN_DIR/ReceiptBench" write-import-fixture "$TMP" "$IMPORTS"
FAKE_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
python3 - "$TMP/import-histories.jsonl" "$FAKE_PORT" >"$TMP/fake.log" 2>&1 <<'PY' &
import http.server, json, re, socket, sys
histories = {}
for line in open(sys.argv[1], "rb"):
    item = json.loads(line)
    histories[item["id"]] = json.dumps(item["history"]).encode()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def setup(self):
        super().setup()
        # Headers and body go in two writes: without this, Nagle's algorithm holds the body for the client's
        # delayed ACK, 40 ms an answer (measured: every import at 23/s, debug or release).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_GET(self):
        match = re.search(r"/inApps/v2/history/(\d+)", self.path)
        body = histories.get(match.group(1)) if match else None
        status = 200 if body and self.headers.get("Authorization", "").startswith("Bearer ") else 404
        body = body if status == 200 else b'{"errorCode":4040010,"errorMessage":"Transaction id not found."}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
PY
FAKE_PID=$!
CREDENTIALS=(--apple-issuer-id 5a6f1c3e-8d2b-4c7a-9e0f-1b2c3d4e5f60 --apple-key-id ABC123DEFG
    --apple-private-key-file "$TMP/apple-key.p8")
STOREKIT=(--production-url "http://127.0.0.1:$FAKE_PORT" --sandbox-url "http://127.0.0.1:$FAKE_PORT"
    --trust-anchors "$TMP/anchors" --allow-test-data)

# import TOKEN LABEL [ARGS…]: customers import of the fixture's file into the app; prints the rate and the report.
import_into() {
    local token=$1 label=$2
    shift 2
    /usr/bin/time -f "%e %M" -o "$TMP/time" "$RV" customers import "$token" --file "$TMP/import.csv" --json \
        "${STOREKIT[@]}" "$@" >"$TMP/report.json" 2>>"$TMP/import.log" || { cat "$TMP/import.log" >&2; exit 1; }
    read -r seconds peak <"$TMP/time"
    python3 - "$label" "$seconds" "$peak" "$TMP/report.json" "$IMPORTS" <<'PY'
import json, sys
label, seconds, peak, report, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
r = json.load(open(report))
print(f"   import {label}: {count} originals in {seconds:.1f} s ({count / max(seconds, 0.001):,.0f}/s), "
      f"peak memory {peak / 1024:.1f} MiB; imported {r['imported']}, new {r['new_transactions']}, "
      f"known {r['known_transactions']}, skipped {r['skipped']}, failed {len(r['failed'])}")
open(report + ".rate", "w").write(str(count / max(seconds, 0.001)))
PY
}

# fill STORE: the app's ledger, ROWS rows first seen a millisecond apart (SQL straight into the table: the API would
# take hours), each claimed by one of ROWS/10 users.
fill() {
    local store=$1 app_id=$2
    case $store in
    sqlite)
        python3 - "$TMP/bench.sqlite" "$app_id" "$ROWS" <<'PY'
import sqlite3, sys
path, app, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(path)
start = 1_790_000_000_000
def batches():
    for base in range(0, rows, 10_000):
        yield [(app, "app_store", "Production", f"{2_000_000_000 + i}", f"{2_000_000_000 + i - i % 3}",
                "com.example.bench.monthly", start + i - 5_000, 1, start + i, start + i, f"bench{i}")
               for i in range(base, min(rows, base + 10_000))]
for batch in batches():
    db.executemany(
        "INSERT INTO ledger_transactions (app_id, store, environment, transaction_id, original_transaction_id, "
        "product_id, purchase_date, quantity, first_seen_at, last_seen_at, first_request_id, apple_finish_attempts, "
        "google_ack_attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)", batch)
db.commit()
PY
        ;;
    postgres)
        psql -q -v ON_ERROR_STOP=1 "$BENCH_POSTGRES_URL" <<SQL
INSERT INTO ledger_transactions (app_id, store, environment, transaction_id, original_transaction_id, product_id,
    purchase_date, quantity, first_seen_at, last_seen_at, first_request_id)
SELECT '$app_id', 'app_store', 'Production', (2000000000 + i)::text, (2000000000 + i - i % 3)::text,
    'com.example.bench.monthly', 1790000000000 + i - 5000, 1,
    TIMESTAMPTZ 'epoch' + (1790000000000 + i) * INTERVAL '1 millisecond',
    TIMESTAMPTZ 'epoch' + (1790000000000 + i) * INTERVAL '1 millisecond', 'bench' || i
FROM generate_series(0, $ROWS - 1) AS i;
-- Statistics for the planner, as autovacuum would gather them after a bulk load: without them the first export
-- reads the ledger with a plan for an empty table (measured: 19 x slower).
ANALYZE ledger_transactions;
SQL
        ;;
    esac
}

# peak_rss PID: the largest resident size (KiB) of PID, sampled every 0.1 s until it exits or $TMP/stop appears.
sample() {
    local pid=$1 peak=0 rss
    while kill -0 "$pid" 2>/dev/null && [ ! -e "$TMP/stop" ]; do
        rss=$(ps -o rss= -p "$pid" 2>/dev/null | tr -d ' ' || echo 0)
        [ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
        sleep 0.1
    done
    echo "$peak"
}

bench() {
    local store=$1
    echo "== $store: $ROWS rows"
    "$RV" plan set bench --quota unlimited --rate-limit 1000 --encrypted true >/dev/null
    "$RV" account create --name Bench --email bench@example.com --plan bench >/dev/null
    local key token app_id
    key=$("$RV" key create --account bench@example.com --label bench --json | json key)
    token=$("$RV" app add --account bench@example.com --name bench --bundle-id com.example.bench \
        --environment production --mode local "${CREDENTIALS[@]}" --json | json token)
    app_id=$("$RV" app show "$token" --json | json id)
    local began=$SECONDS
    fill "$store" "$app_id"
    echo "   filled in $((SECONDS - began)) s"

    for limit in "$TENTH" "$ROWS"; do
        /usr/bin/time -f "%e %M" -o "$TMP/time" "$RV" export "$token" --kind transactions --limit "$limit" \
            --output "$TMP/out.jsonl" 2>/dev/null
        read -r seconds peak <"$TMP/time"
        local lines
        lines=$(wc -l <"$TMP/out.jsonl")
        python3 -c 'import sys; s, l, p = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]); print(f"   CLI: {l} rows in {s:.1f} s ({l / max(s, 0.001):,.0f} rows/s), peak memory {p / 1024:.1f} MiB")' \
            "$seconds" "$lines" "$peak"
    done

    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    "$RV" serve --hostname 127.0.0.1 --port "$port" >"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    for limit in "$TENTH" "$ROWS"; do
        rm -f "$TMP/stop"
        sample "$SERVER_PID" >"$TMP/peak" &
        local sampler=$!
        local began_ns ended_ns
        began_ns=$(date +%s%N)
        curl -sf -H "Authorization: Bearer $key" \
            "http://127.0.0.1:$port/api/export?token=$token&kind=transactions&limit=$limit" -o "$TMP/api.jsonl"
        ended_ns=$(date +%s%N)
        touch "$TMP/stop"
        wait "$sampler"
        python3 -c 'import sys; n, l, p = (int(x) for x in sys.argv[1:4]); s = n / 1e9; print(f"   API: {l} rows in {s:.1f} s ({l / max(s, 0.001):,.0f} rows/s), server peak memory {p / 1024:.1f} MiB")' \
            "$((ended_ns - began_ns))" "$(wc -l <"$TMP/api.jsonl")" "$(cat "$TMP/peak")"
    done
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=

    # Imports: into the full ledger and into an empty one of the same account, new, then known, then skipped.
    local empty
    empty=$("$RV" app add --account bench@example.com --name empty --bundle-id com.example.bench --share-bundle-id \
        --environment production --mode local "${CREDENTIALS[@]}" --json | json token)
    import_into "$token" "into $ROWS rows, new"
    cp "$TMP/report.json.rate" "$TMP/full.rate"
    import_into "$empty" "into an empty ledger, new"
    cp "$TMP/report.json.rate" "$TMP/empty.rate"
    python3 -c 'import sys; f, e = (float(open(p).read()) for p in sys.argv[1:3]); print(f"   import ratio, full ÷ empty ledger: {f / e:.2f}")' \
        "$TMP/full.rate" "$TMP/empty.rate"
    import_into "$token" "into $ROWS rows, again (all known)"
    import_into "$token" "into $ROWS rows, --skip-known (all skipped)" --skip-known
}

RECEIPTVERIFY_DATABASE_URL=$TMP/bench.sqlite bench sqlite
if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
    RECEIPTVERIFY_DATABASE_URL=$BENCH_POSTGRES_URL bench postgres
fi
