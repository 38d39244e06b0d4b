#!/usr/bin/env bash
# Server CPU time per POST /api call of two or more release builds, in turn (docs/performance.md): steadier than
# requests per second on a shared machine where those move ±40 % between runs, because the time other tenants steal
# is not the server's CPU time. (valgrind 3.19 cannot run the server, and this VM exposes no instruction counters.)
#
# Usage: scripts/api-cpu.sh LABEL=BIN_DIR [LABEL=BIN_DIR ...]
#   Each BIN_DIR holds a release `receiptverify`; the first also needs `ReceiptBench` (the load fixture's receipts).
# WITH_USER=1 sends each receipt with its own app_user_id (load-0 … load-7), and gives builds that have entitlements
# (issue 34) a catalog whose subscription grants `pro`: answers then carry the customer's view.
# ROUNDS=N rounds (default 3), each starting every build's server in turn; CALLS=N calls measured per round (default
# 4000, after 400 to warm up) from one keep-alive client, the 8 receipts in turn (known to the ledger after their
# first call, as in scripts/loadtest.sh). The server's user + system CPU time over the measured calls (from
# /proc/PID/stat) divided by CALLS is the figure; the summary gives each build's per-round figures, their median
# (one round a neighbour's burst slows is an outlier) and mean, and each build's median ÷ the first build's.
set -euo pipefail

# The catalog of builds with entitlements (issue 34), when WITH_USER=1.
catalog() {
    # (The help is read whole: `grep -q` would stop reading it, and pipefail would take the SIGPIPE for a "no".)
    if [ "${WITH_USER:-0}" = 1 ] && "$1/receiptverify" app add --help 2>/dev/null | grep -c -- ENTITLEMENT >/dev/null; then
        printf '%s %s %s %s' --product com.example.app.monthly=auto_renewable:pro --product \
            com.example.app.coins=consumable
    fi
}
# Binds the test roots to the app, where the build has test anchors per app (issue 32; the build before had none).
test_anchor() {
    if "$1/receiptverify" app add --help 2>/dev/null | grep -c -- --test-anchor >/dev/null; then
        printf '%s %s' --test-anchor "$WORK/anchors"
    fi
}
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 LABEL=BIN_DIR [LABEL=BIN_DIR ...]" >&2; exit 1; }
ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-4000}
WORK=$(mktemp -d /tmp/receiptverify-cpu.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"${1#*=}/ReceiptBench" write-load-fixture "$WORK" 8

for pair in "$@"; do
    label=${pair%%=*} bin=${pair#*=} dir="$WORK/$label"
    mkdir -p "$dir"
    export RECEIPTVERIFY_DATABASE_URL=$dir/rv.sqlite RECEIPTVERIFY_MASTER_KEY_FILE=$dir/master.key
    "$bin/receiptverify" migrate >/dev/null
    "$bin/receiptverify" plan set load --quota 1000000000000 --rate-limit 10000000 >/dev/null
    "$bin/receiptverify" account create --name Load --email load@example.com --plan load >/dev/null
    key=$("$bin/receiptverify" key create --account load@example.com --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    token=$("$bin/receiptverify" app add --account load@example.com --bundle-id com.example.app --allow-test-data \
        $(test_anchor "$bin") $(catalog "$bin") --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
    python3 - "$key" "$token" "$WORK" "$dir" "${WITH_USER:-0}" <<'PY'
import sys, urllib.parse
key, token, work, folder, with_user = sys.argv[1:6]
for i in range(8):
    receipt = open(f"{work}/receipt-{i}.b64").read().strip()
    fields = {"apikey": key, "token": token, "receipt": receipt}
    if with_user == "1":
        fields["app_user_id"] = f"load-{i}"
    open(f"{folder}/body-{i}", "w").write(urllib.parse.urlencode(fields))
PY
done

: >"$WORK/rounds"
for round in $(seq "$ROUNDS"); do
    for pair in "$@"; do
        label=${pair%%=*} bin=${pair#*=} dir="$WORK/$label"
        export RECEIPTVERIFY_DATABASE_URL=$dir/rv.sqlite RECEIPTVERIFY_MASTER_KEY_FILE=$dir/master.key
        port=$(free_port)
        "$bin/receiptverify" serve --port "$port" --trust-anchors "$WORK/anchors" --log-level warning \
            >>"$dir/serve.log" 2>&1 &
        SERVER_PID=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
        python3 - "$port" "$dir" "$CALLS" "$SERVER_PID" "$label" "$round" >>"$WORK/rounds" <<'PY'
import http.client, os, sys
port, folder, count, pid, label, round_ = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
bodies = [open(f"{folder}/body-{i}").read() for i in range(8)]
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def calls(n):
    for k in range(n):
        connection.request("POST", "/api", bodies[k % 8], {"Content-Type": "application/x-www-form-urlencoded"})
        answer = connection.getresponse()
        data = answer.read()
        if answer.status != 200 or b'"status":0' not in data:
            sys.exit(f"call {k}: HTTP {answer.status} {data[:200]!r}")
def cpu():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
calls(400)
before = cpu()
calls(count)
print(label, round_, f"{(cpu() - before) / count * 1e6:.1f}")
PY
        kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
        tail -1 "$WORK/rounds"
    done
done

echo
echo "server CPU time per /api call (µs), $CALLS calls per round:"
python3 - "$WORK/rounds" "${1%%=*}" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
labels = list(dict.fromkeys(r[0] for r in rows))
import statistics
figures = {label: [float(r[2]) for r in rows if r[0] == label] for label in labels}
medians = {label: statistics.median(values) for label, values in figures.items()}
first = sys.argv[2]
for label in labels:
    listed = " ".join(f"{value:.0f}" for value in figures[label])
    print(f"  {label}: {listed}  median {medians[label]:.1f} ({medians[label] / medians[first]:.3f} x {first}),"
          f" mean {statistics.mean(figures[label]):.1f}")
PY
