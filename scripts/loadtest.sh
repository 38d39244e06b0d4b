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
# STORE=postgres runs the servers on PostgreSQL (a throwaway cluster started here, one database per build) instead
#                of SQLite.
# STORE=both     loads this build on SQLite and on PostgreSQL in turn (SQLite first in every round, in the "baseline"
#                rows): the summary's current ÷ baseline is then PostgreSQL ÷ SQLite (issue 38). Not with BASELINE_BIN.
# NEW=N          loads a stream of N distinct receipts (default 0: the 8 receipts in turn), none sent twice: every
#                transaction of every /api call is new to the ledger. The summary says if the stream ran out
#                (then some were sent twice: raise N or shorten DURATION). Each round first loads the 8 known
#                receipts in turn (recorded during the warm-up) on the same server for DURATION, so the summary
#                gives new ÷ known of one run (issue 38).
# ROUTE=customers loads POST /api/customers instead (issue 34): the app gets a catalog whose subscription grants
#                `pro`, each receipt is first verified with its own app_user_id (load-0 … load-7), and the load asks
#                for those 8 customers in turn (known customers, answered from memory). The summary's "/api" rows
#                are then /api/customers.
# WITH_USER=1    sends each /api receipt with its own app_user_id (load-0 … load-7), and gives builds that have
#                entitlements (issue 34) the catalog above, so each answer carries the user's `customer`: the
#                "/api with a user and entitlements" figure, against the build before with BASELINE_BIN.
# Needs wrk (installed with apt when missing and run as root).
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"

# Binds the test roots to the app, where the build has test anchors per app (issue 32; the build before had none).
test_anchor() {
    if "$1/receiptverify" app add --help 2>/dev/null | grep -c -- --test-anchor >/dev/null; then
        printf '%s %s' --test-anchor "$WORK/anchors"
    fi
}
cd "$(dirname "$0")/.."
DURATION=${1:-30}
CONNECTIONS=${2:-32}
THREADS=${3:-2}
ROUNDS=${ROUNDS:-2}
NEW=${NEW:-0}
STORE=${STORE:-sqlite}
ROUTE=${ROUTE:-api}
case "$ROUTE" in
    api) LOAD_PATH=/api BODY_PREFIX=body- ;;
    customers) LOAD_PATH=/api/customers BODY_PREFIX=customer- ;;
    *) echo "ROUTE must be api or customers" >&2; exit 1 ;;
esac
# The receipts the load sends (the stream plus the warm-up receipt with NEW).
# With NEW, receipts 0-7 are the known ones and 8 onwards the stream.
if [ "$NEW" -gt 0 ]; then RECEIPTS=$((NEW + 8)); else RECEIPTS=8; fi
case "$STORE" in
    sqlite | postgres) ;;
    both) [ -z "${BASELINE_BIN:-}" ] || { log "STORE=both compares the stores of one build: no BASELINE_BIN"; exit 1; } ;;
    *) log "STORE must be sqlite, postgres or both"; exit 1 ;;
esac

need_wrk
release_build
CURRENT=$BIN
# With STORE=both the "baseline" is this build on SQLite.
[ "$STORE" = both ] && BASELINE_BIN=$CURRENT

WORK=$(mktemp -d /tmp/receiptverify-load.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    stop_postgres
    [ -n "${PERF:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

[ "$STORE" = sqlite ] || start_postgres

# The store of build label $1: with STORE=both, SQLite for the baseline and PostgreSQL for the current build.
store_of() {
    if [ "$STORE" = both ]; then
        [ "$1" = baseline ] && echo sqlite || echo postgres
    else
        echo "$STORE"
    fi
}

# The database of build label $1, in $2 (the label's folder).
database_url() {
    if [ "$(store_of "$1")" = postgres ]; then
        postgres_url "load_$1$DB_SUFFIX"
    else
        echo "$2/rv.sqlite"
    fi
}

"$CURRENT/ReceiptBench" write-load-fixture "$WORK" "$RECEIPTS"

# Server CPU µs per answered request of wrk report $1 between tick counts $2 and $3, written to $1.cpu.
cpu_per_request() {
    local requests
    requests=$(awk '/requests in/ { print $1 }' "$1")
    awk -v a="$2" -v b="$3" -v n="$requests" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.0f\n", (b - a) / hz * 1e6 / (n > 0 ? n : 1) }' >"$1.cpu"
    echo "server CPU per request: $(cat "$1.cpu") µs"
}

# Milliseconds of wrk's latency line for percentile $2 in report $1 (wrk prints us, ms or s).
percentile() {
    awk -v p="$2" '$1 == p {
        v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        print (u == "us" ? v / 1000 : u == "s" ? v * 1000 : v) }' "$1"
}

# One-time set-up of a build's database in $WORK/db-LABEL (bench-lib.sh's load_tenant) and the request bodies.
setup() {
    local bin=$1 label=$2 dir="$WORK/db-$2$DB_SUFFIX"
    mkdir -p "$dir"
    [ "$(store_of "$label")" = postgres ] && create_database "load_$label$DB_SUFFIX"
    RECEIPTVERIFY_DATABASE_URL=$(database_url "$label" "$dir")
    export RECEIPTVERIFY_DATABASE_URL RECEIPTVERIFY_MASTER_KEY_FILE="$dir/master.key"
    local catalog=()
    if [ "$ROUTE" = customers ] || { [ "${WITH_USER:-0}" = 1 ] \
        && "$bin/receiptverify" app add --help 2>/dev/null | grep -c -- ENTITLEMENT >/dev/null; }; then
        catalog=(--product com.example.app.monthly=auto_renewable:pro --product com.example.app.coins=consumable)
    fi
    # shellcheck disable=SC2046 # test_anchor's words are two arguments, or none
    load_tenant "$bin" $(test_anchor "$bin") ${catalog[@]+"${catalog[@]}"}
    write_bodies "$WORK" "$dir" "$RECEIPTS"
    # The load's bodies: with NEW, receipts 8…N+7, each wrk thread sending its own share once; else the 8 in turn.
    # The warm-up and the known load (LOAD_KNOWN=1) send bodies 0-7 in turn.
    local first=0 last=$((RECEIPTS - 1))
    [ "$NEW" -gt 0 ] && first=8
    cat >"$dir/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local threads, next_id = {}, 0
function setup(thread)
    thread:set("id", next_id); thread:set("count", $THREADS); next_id = next_id + 1
    table.insert(threads, thread)
end
local bodies, n = {}, 0
function init(args)
    local known = os.getenv("LOAD_KNOWN") == "1"
    local from, to = $first, $last
    if known then from, to = 0, 7 end
    for i = from, to do
        if known or $NEW == 0 or (i - from) % count == id then
            local f = io.open("$dir/$BODY_PREFIX" .. i, "rb"); bodies[#bodies + 1] = f:read("*a"); f:close()
        end
    end
    wrapped = 0
end
function request()
    n = n + 1
    if n > #bodies then n = 1; wrapped = wrapped + 1 end
    return wrk.format(nil, nil, nil, bodies[n])
end
function done(summary, latency, requests)
    local total = 0
    for _, thread in ipairs(threads) do total = total + (thread:get("wrapped") or 0) end
    if $NEW > 0 and os.getenv("LOAD_KNOWN") ~= "1" then
        io.write(string.format("stream ran out: %d time(s)\\n", total))
    end
end
LUA
}

# One round of build $1 (label $2): start the server, load /api, then /healthz; appends
# "label route requests/s p50 p99" lines to $WORK/summary.
round() {
    local bin=$1 label=$2 dir="$WORK/db-$2$DB_SUFFIX" port
    RECEIPTVERIFY_DATABASE_URL=$(database_url "$label" "$dir")
    export RECEIPTVERIFY_DATABASE_URL RECEIPTVERIFY_MASTER_KEY_FILE="$dir/master.key"
    port=$(free_port)
    # One info line per request goes to a file, as in production.
    "$bin/receiptverify" serve --port "$port" --trust-anchors "$WORK/anchors" 2>>"$dir/serve.log" &
    SERVER_PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    for index in $(seq 0 7); do
        local status
        status=$(curl -s -X POST -H 'Content-Type: application/x-www-form-urlencoded' \
            --data-binary @"$dir/body-$index" "http://127.0.0.1:$port/api" \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
        [ "$status" = 0 ] || { log "receipt $index does not verify (status $status)"; exit 1; }
    done
    log "[$label] warm-up 5 s"
    LOAD_KNOWN=1 wrk -t"$THREADS" -c"$CONNECTIONS" -d5s -s "$dir/post.lua" "http://127.0.0.1:$port$LOAD_PATH" >/dev/null
    if [ "$NEW" -gt 0 ]; then
        log "[$label] $LOAD_PATH: ${DURATION}s, $CONNECTIONS connections, the 8 known receipts in turn"
        local ticks
        ticks=$(cpu_ticks "$SERVER_PID")
        LOAD_KNOWN=1 wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$dir/post.lua" \
            "http://127.0.0.1:$port$LOAD_PATH" | tee "$WORK/wrk-known"
        cpu_per_request "$WORK/wrk-known" "$ticks" "$(cpu_ticks "$SERVER_PID")"
    fi
    local rss_before perf_pid=
    rss_before=$(ps -o rss= -p "$SERVER_PID" | tr -d ' ')
    if [ -n "${PERF:-}" ] && [ "$label" = current ] && [ ! -e "$WORK/perf.data" ]; then
        perf record -F 499 -g -o "$WORK/perf.data" -p "$SERVER_PID" -- sleep "$DURATION" 2>/dev/null &
        perf_pid=$!
    fi
    log "[$label] $LOAD_PATH: ${DURATION}s, $CONNECTIONS connections, $THREADS wrk thread(s), $(store_of "$label"), $(
        [ "$NEW" -gt 0 ] && echo "a stream of $NEW new receipts" || echo "$RECEIPTS receipts in turn")"
    local api_ticks
    api_ticks=$(cpu_ticks "$SERVER_PID")
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$dir/post.lua" "http://127.0.0.1:$port$LOAD_PATH" \
        | tee "$WORK/wrk-api"
    cpu_per_request "$WORK/wrk-api" "$api_ticks" "$(cpu_ticks "$SERVER_PID")"
    [ -n "$perf_pid" ] && wait "$perf_pid" || true
    log "[$label] /healthz: ${DURATION}s"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$port/healthz" \
        | tee "$WORK/wrk-health"
    echo "server resident memory (KiB): $rss_before after warm-up, $(ps -o rss= -p "$SERVER_PID" | tr -d ' ') at the end"
    # How the ledger answered (builds with a ledger): from memory, or with a database round trip.
    curl -s "http://127.0.0.1:$port/metrics" | grep -E '^receiptverify_ledger_(writes|memory_answers)_total' \
        | sed "s/^/[$label] /" || true
    kill "$SERVER_PID" && wait "$SERVER_PID" || true
    SERVER_PID=
    local routes=(api health)
    [ "$NEW" -gt 0 ] && routes=(known api health)
    for route in "${routes[@]}"; do
        printf '%s %s %s %s %s %s\n' "$label" "$route" "$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk-$route")" \
            "$(percentile "$WORK/wrk-$route" 50%)" "$(percentile "$WORK/wrk-$route" 99%)" \
            "$(cat "$WORK/wrk-$route.cpu" 2>/dev/null || echo -)" >>"$WORK/summary"
    done
}

labels=(current)
[ -n "${BASELINE_BIN:-}" ] && labels=(baseline current)
# Each build's database; with NEW, a fresh one every round (a stream sent again would be known).
DB_SUFFIX=
setup_all() {
    for label in "${labels[@]}"; do
        if [ "$label" = baseline ]; then setup "$BASELINE_BIN" baseline; else setup "$CURRENT" current; fi
    done
}
[ "$NEW" -gt 0 ] || setup_all
for round_number in $(seq "$ROUNDS"); do
    if [ "$NEW" -gt 0 ]; then DB_SUFFIX="_r$round_number"; setup_all; fi
    for label in "${labels[@]}"; do
        if [ "$label" = baseline ]; then round "$BASELINE_BIN" baseline; else round "$CURRENT" current; fi
    done
done

# Every answer was billable: the graceful stops must have flushed them all.
RECEIPTVERIFY_DATABASE_URL=$(database_url current "$WORK/db-current$DB_SUFFIX")
export RECEIPTVERIFY_DATABASE_URL RECEIPTVERIFY_MASTER_KEY_FILE="$WORK/db-current$DB_SUFFIX/master.key"
echo "billable calls metered: $("$CURRENT/receiptverify" usage --account load@example.com --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')" \
    "(status-0 answers logged: $(grep -c 'status=0 ' "$WORK/db-current$DB_SUFFIX/serve.log" || true))"
echo "non-200 answers logged: $(grep -v 'http.status=200' "$WORK/db-current$DB_SUFFIX/serve.log" | grep -c 'request_id' || true)"
echo
[ "$STORE" = both ] && echo "(STORE=both: baseline = this build on SQLite, current = this build on PostgreSQL)"
echo "summary (label, route, requests/s, p50 ms, p99 ms, server CPU µs per request):"
sed 's/^/  /' "$WORK/summary"
awk '{ key = $1 " " $2; rate[key] += $3; p50[key] += $4; p99[key] += $5; cpu[key] += $6; n[key]++ } END {
    split("baseline current", labels, " ");
    for (i = 1; i <= 2; i++) {
        l = labels[i]; a = l " api"; h = l " health"; k = l " known";
        if (!n[a]) continue;
        if (n[k]) printf "  %s: known /api %.0f/s (p50 %.2f ms, p99 %.2f ms, %.0f µs CPU); new /api = %.3f x known (%.0f µs CPU)\n",
            l, rate[k] / n[k], p50[k] / n[k], p99[k] / n[k], cpu[k] / n[k], rate[a] / rate[k], cpu[a] / n[a];
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
