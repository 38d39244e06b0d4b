#!/usr/bin/env bash
# The pieces the load benchmarks share (sourced by scripts/loadtest.sh and scripts/scaleout-bench.sh): tools, the
# release build, a throwaway PostgreSQL cluster, the load's account and app, the request bodies, CPU time.

log() { printf '==> %s\n' "$*" >&2; }

# Runs a command as the cluster's owner (postgres when run as root: PostgreSQL refuses to run as root).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# A free port on loopback.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

need_wrk() {
    if ! command -v wrk >/dev/null 2>&1; then
        log "installing wrk"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
    fi
}

# Sets BIN: CURRENT_BIN when given (a release build made elsewhere, holding receiptverify and ReceiptBench), else a
# release build of this tree in .build-release.
release_build() {
    if [ -n "${CURRENT_BIN:-}" ]; then
        BIN=$CURRENT_BIN
    else
        log "building release (scratch .build-release)"
        swift build -c release --product receiptverify --scratch-path .build-release >/dev/null
        swift build -c release --product ReceiptBench --scratch-path .build-release >/dev/null
        BIN=.build-release/release
    fi
}

# Starts a throwaway cluster with durable commits (fsync on, as in production) as scripts/test.sh starts one, installing
# PostgreSQL when missing. Sets PG_BIN, PG_DIR and PG_PORT; stop_postgres removes it.
PG_BIN= PG_DIR= PG_PORT=
start_postgres() {
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r | head -1)
    if ! [ -x "$PG_BIN/initdb" ]; then
        log "installing PostgreSQL"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V -r | head -1)
    fi
    PG_DIR=$(mktemp -d /tmp/receiptverify-bench-pg.XXXXXX)
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir "$PG_DIR" postgres
        chown postgres "$PG_DIR"
    fi
    PG_PORT=$(free_port)
    as_pg "$PG_BIN/initdb" -U postgres --auth=trust -D "$PG_DIR/data" >"$PG_DIR/initdb.log" 2>&1
    as_pg "$PG_BIN/pg_ctl" -w -D "$PG_DIR/data" -l "$PG_DIR/server.log" \
        -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 ${PG_EXTRA_OPTIONS:-}" \
        start >/dev/null
    log "PostgreSQL on 127.0.0.1:$PG_PORT"
}

stop_postgres() {
    [ -n "$PG_DIR" ] || return 0
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
    PG_DIR=
}

# The URL of database $1 in the cluster, created by create_database.
postgres_url() { echo "postgres://postgres@127.0.0.1:$PG_PORT/$1?sslmode=disable"; }
create_database() { as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$1"; }

# With RECEIPTVERIFY_DATABASE_URL and RECEIPTVERIFY_MASTER_KEY_FILE exported: migrates the database of build $1 and
# gives it a plan whose limits the load never reaches (finite, so the quota arithmetic runs on every call), an account
# and its key, and an app (`app add` takes the further arguments). Sets LOAD_KEY and LOAD_TOKEN.
load_tenant() {
    local bin=$1
    shift
    "$bin/receiptverify" migrate >/dev/null
    "$bin/receiptverify" plan set load --quota 1000000000000 --rate-limit 10000000 --encrypted true >/dev/null
    "$bin/receiptverify" account create --name Load --email load@example.com --plan load >/dev/null
    LOAD_KEY=$("$bin/receiptverify" key create --account load@example.com --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    LOAD_TOKEN=$("$bin/receiptverify" app add --account load@example.com --bundle-id com.example.app \
        --allow-test-data "$@" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
}

# Writes $2/body-I for receipts 0…$3-1 ($1/receipt-I.b64, from `ReceiptBench write-load-fixture`) with the key and
# token of load_tenant. ROUTE=customers also writes $2/customer-I (POST /api/customers of user load-I) and sends each
# receipt with its user; WITH_USER=1 sends each receipt with its user.
write_bodies() {
    python3 - "$LOAD_KEY" "$LOAD_TOKEN" "$1" "$2" "$3" "${ROUTE:-api}" "${WITH_USER:-0}" <<'PY'
import sys, urllib.parse
key, token, work, folder, count, route, with_user = sys.argv[1:5] + [int(sys.argv[5]), sys.argv[6], sys.argv[7]]
for index in range(count):
    receipt = open(f"{work}/receipt-{index}.b64").read().strip()
    fields = {"apikey": key, "token": token, "receipt": receipt}
    if with_user == "1":
        fields["app_user_id"] = f"load-{index}"
    if route == "customers":
        fields["app_user_id"] = f"load-{index}"
        with open(f"{folder}/customer-{index}", "w") as body:
            body.write(urllib.parse.urlencode({"apikey": key, "token": token, "app_user_id": f"load-{index}"}))
    with open(f"{folder}/body-{index}", "w") as body:
        body.write(urllib.parse.urlencode(fields))
PY
}

# The CPU time process $1 has used so far (user and system), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
