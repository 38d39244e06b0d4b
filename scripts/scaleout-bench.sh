#!/usr/bin/env bash
# Scale-out on one PostgreSQL (issue 38, docs/performance.md and docs/operations.md): 1, 2 and 3 servers on one
# database, each loaded by its own wrk with the same stream of new receipts in the same order, so that every receipt
# reaches every server at about the same time and the servers race to record each transaction.
#
# Usage: scripts/scaleout-bench.sh [DURATION_SECONDS=10] [CONNECTIONS=32] [SERVERS="1 2 3"]
# CONNECTIONS are shared out among the servers. For each count of servers, on a fresh database, it reports requests/s
# over all servers, the servers' CPU time per request and requests per server CPU-second, and checks exactly once:
# across every answer of every server, no transaction was answered `new` twice; every transaction the ledger holds
# was answered `new` once, except those whose answer wrk dropped at the end of its run (at most one receipt per
# connection); and every answer was status 0.
#
# CURRENT_BIN=DIR   a release build holding receiptverify and ReceiptBench (default: builds into .build-release).
# NEW=N             receipts in the stream (default 20000; the summary says if a server's share ran out).
# SPLIT=1           gives each server its own share of the stream instead (receipt i to server i mod N): traffic
#                   as a balancer spreads it, for throughput per server; exactly once is checked the same way.
# Needs wrk and PostgreSQL's server binaries (installed with apt when missing and run as root).
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNECTIONS=${2:-32}
SERVER_COUNTS=${3:-"1 2 3"}
NEW=${NEW:-20000}

need_wrk
release_build
WORK=$(mktemp -d /tmp/receiptverify-scaleout.XXXXXX)
PIDS=()
stop_servers() {
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}
cleanup() {
    stop_servers
    stop_postgres
    rm -rf "$WORK"
}
trap cleanup EXIT
start_postgres

"$BIN/ReceiptBench" write-load-fixture "$WORK" $((NEW + 8))

# One database per count of servers: account, key and app, and the request bodies (receipts 0-7 warm up, 8 onwards
# are the stream).
setup() {
    local servers=$1 dir="$WORK/n$1"
    mkdir -p "$dir"
    create_database "scale_$servers"
    RECEIPTVERIFY_DATABASE_URL=$(postgres_url "scale_$servers")
    export RECEIPTVERIFY_DATABASE_URL RECEIPTVERIFY_MASTER_KEY_FILE="$dir/master.key"
    load_tenant "$BIN" --test-anchor "$WORK/anchors"
    write_bodies "$WORK" "$dir" $((NEW + 8))
}

# wrk's script: every server's wrk sends the same stream in the same order (one thread, its connections taking the
# next body in turn) and writes the transaction ids each answer calls `new` to a file of its own.
write_script() {
    local dir=$1
    cat >"$dir/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local threads = {}
function setup(thread) table.insert(threads, thread) end
local bodies, n, out = {}, 0, nil
-- Globals of the thread's state, read by done() through thread:get.
wrapped, answers, not_zero = 0, 0, 0
function init(args)
    local from, to = 8, $((NEW + 7))
    if os.getenv("LOAD_KNOWN") == "1" then from, to = 0, 7 end
    local share, shares = tonumber(os.getenv("SHARE") or "0"), tonumber(os.getenv("SHARES") or "1")
    for i = from, to do
        if from == 0 or (i - from) % shares == share then
            local f = io.open("$dir/body-" .. i, "rb"); bodies[#bodies + 1] = f:read("*a"); f:close()
        end
    end
    if os.getenv("NEW_IDS") then out = io.open(os.getenv("NEW_IDS"), "w") end
end
function request()
    n = n + 1
    if n > #bodies then n = 1; wrapped = wrapped + 1 end
    return wrk.format(nil, nil, nil, bodies[n])
end
function response(status, headers, body)
    answers = answers + 1
    if status ~= 200 or not body:find('"status":0', 1, true) then not_zero = not_zero + 1 end
    if out then
        -- The ledger's entries (the only objects with "environment" right after "product_id"), and their state.
        for id, state in body:gmatch('"transaction_id":"([^"]+)","original_transaction_id":"[^"]+","product_id":"[^"]+","environment":"[^"]+".-"state":"([%a_]+)"') do
            if state == "new" then out:write(id, "\\n") end
        end
        out:flush()
    end
end
function done(summary, latency, requests)
    local ran_out, all, bad = 0, 0, 0
    for _, thread in ipairs(threads) do
        ran_out = ran_out + (thread:get("wrapped") or 0)
        all = all + (thread:get("answers") or 0)
        bad = bad + (thread:get("not_zero") or 0)
    end
    io.write(string.format("stream ran out: %d time(s)\\n", ran_out))
    io.write(string.format("answers not status 0: %d of %d\\n", bad, all))
end
LUA
}

echo "servers requests/s cpu_us_per_request requests_per_server_cpu_second p50_ms p99_ms" >"$WORK/summary"
for servers in $SERVER_COUNTS; do
    dir="$WORK/n$servers"
    setup "$servers"
    write_script "$dir"
    ports=()
    for index in $(seq "$servers"); do
        port=$(free_port)
        "$BIN/receiptverify" serve --port "$port" --trust-anchors "$WORK/anchors" 2>>"$dir/serve-$index.log" &
        PIDS+=($!)
        ports+=("$port")
    done
    for port in "${ports[@]}"; do
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    done
    per=$((CONNECTIONS / servers))
    log "$servers server(s): warm-up 5 s on the known receipts"
    warm_pids=()
    for port in "${ports[@]}"; do
        LOAD_KNOWN=1 wrk -t1 -c"$per" -d5s -s "$dir/post.lua" "http://127.0.0.1:$port/api" >/dev/null &
        warm_pids+=($!)
    done
    wait "${warm_pids[@]}"
    ticks_before=0
    for pid in "${PIDS[@]}"; do ticks_before=$((ticks_before + $(cpu_ticks "$pid"))); done
    log "$servers server(s): ${DURATION}s of the new stream ($([ "${SPLIT:-0}" = 1 ] && echo "a share each" \
        || echo "the same stream each")), $per connections each"
    wrk_pids=()
    for index in $(seq "$servers"); do
        shares=1 share=0
        if [ "${SPLIT:-0}" = 1 ]; then shares=$servers share=$((index - 1)); fi
        SHARE=$share SHARES=$shares NEW_IDS="$dir/new-$index" wrk -t1 -c"$per" -d"${DURATION}s" --latency -s "$dir/post.lua" \
            "http://127.0.0.1:${ports[$((index - 1))]}/api" >"$dir/wrk-$index" &
        wrk_pids+=($!)
    done
    wait "${wrk_pids[@]}"
    ticks_after=0
    for pid in "${PIDS[@]}"; do ticks_after=$((ticks_after + $(cpu_ticks "$pid"))); done
    stop_servers
    for index in $(seq "$servers"); do sed "s/^/[server $index of $servers] /" "$dir/wrk-$index" | grep -E \
        'Requests/sec|requests in|stream ran|not status|  50%|  99%'; done
    rows=$(as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "scale_$servers" -tA \
        -c "SELECT count(*) FROM ledger_transactions")
    python3 - "$dir" "$servers" "$rows" "$ticks_before" "$ticks_after" "$(getconf CLK_TCK)" "$per" \
        "$DURATION" >>"$WORK/summary" <<'PY'
import re, sys
folder, servers, rows, before, after, hz, per, duration = sys.argv[1:9]
servers, rows, per = int(servers), int(rows), int(per)
rate, requests, p50, p99, not_zero = 0.0, 0, [], [], 0
ms = lambda v: float(v[:-2]) if v.endswith("ms") else float(v[:-2]) / 1000 if v.endswith("us") else float(v[:-1]) * 1000
new_ids, seen_twice = set(), 0
for index in range(1, servers + 1):
    text = open(f"{folder}/wrk-{index}").read()
    rate += float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    requests += int(re.search(r"(\d+) requests in", text).group(1))
    p50.append(ms(re.search(r"\s50%\s+(\S+)", text).group(1)))
    p99.append(ms(re.search(r"\s99%\s+(\S+)", text).group(1)))
    not_zero += int(re.search(r"answers not status 0: (\d+)", text).group(1))
    if int(re.search(r"stream ran out: (\d+)", text).group(1)):
        sys.exit(f"server {index}'s stream ran out: raise NEW or shorten the run")
    for line in open(f"{folder}/new-{index}"):
        transaction = line.strip()
        if transaction in new_ids:
            seen_twice += 1
        new_ids.add(transaction)
known_rows = 8 * 10  # the warm-up's receipts, 10 purchases each
stream_rows = rows - known_rows
unanswered = stream_rows - len(new_ids)
cpu_us = (int(after) - int(before)) / int(hz) * 1e6 / requests
ok = seen_twice == 0 and not_zero == 0 and 0 <= unanswered <= per * servers * 10
print(f"{servers} {rate:.0f} {cpu_us:.0f} {1e6 / cpu_us:.0f} {max(p50):.2f} {max(p99):.2f}")
print(f"# {servers} server(s): {stream_rows} stream transactions in the ledger, {len(new_ids)} answered new once, "
      f"{seen_twice} answered new twice, {unanswered} recorded but their answer dropped by wrk at the end "
      f"(at most {per * servers * 10}), {not_zero} answers not status 0: {'exactly once' if ok else 'FAILED'}",
      file=sys.stderr)
if not ok:
    sys.exit(1)
PY
done
echo
echo "summary (servers, requests/s over all, server CPU µs per request, requests per server CPU-second, worst p50 ms, worst p99 ms):"
sed 's/^/  /' "$WORK/summary"
