#!/usr/bin/env bash
# Runs the whole test suite: builds, starts a throwaway PostgreSQL cluster (installing PostgreSQL if missing),
# runs every test against SQLite and PostgreSQL, then removes the cluster.
#
# Environment: RECEIPTVERIFY_FIXTURES (Apple fixtures folder, default ../shared/fixtures),
# SWIFT_TEST_ARGS (arguments for one `swift test` run instead of the two below, e.g. "--filter CLITests"; the
# contract and recipe runs at the end are skipped then).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }

find_pg_bin() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
    done
    if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
    return 1
}

PG_BIN=$(find_pg_bin || true)
if [ -z "$PG_BIN" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        log "PostgreSQL server binaries are missing; install the 'postgresql' package (needs root)"
        exit 1
    fi
    log "installing PostgreSQL"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
    PG_BIN=$(find_pg_bin)
fi

# The encrypted-endpoint tests decrypt with independent tools: the openssl command and Python's cryptography.
if ! command -v openssl >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || { log "openssl is missing; install it"; exit 1; }
    log "installing openssl"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
fi
if ! python3 -c 'import cryptography' >/dev/null 2>&1; then
    log "installing Python's cryptography"
    python3 -m pip install --quiet cryptography
fi

# The cluster runs as a non-root user: initdb refuses root.
PG_DIR=$(mktemp -d /tmp/receiptverify-pg.XXXXXX)
if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir "$PG_DIR" postgres
    chown postgres "$PG_DIR"
    as_pg() { runuser -u postgres -- "$@"; }
else
    as_pg() { "$@"; }
fi
PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cleanup() {
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
}
trap cleanup EXIT

log "starting PostgreSQL on 127.0.0.1:$PG_PORT ($PG_BIN)"
as_pg "$PG_BIN/initdb" --no-sync -U postgres --auth=trust -D "$PG_DIR/data" >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
as_pg "$PG_BIN/pg_ctl" -w -D "$PG_DIR/data" -l "$PG_DIR/server.log" \
    -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$PG_DIR/server.log" >&2; exit 1; }

export RECEIPTVERIFY_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
export RECEIPTVERIFY_TEST_PG_BIN="$PG_BIN"

log "building"
swift build --build-tests
export RECEIPTVERIFY_BIN="$(swift build --show-bin-path)/receiptverify"

# The suites that hold the server to time bounds under attack (floods, slow clients, a silent database, the timing
# of 401s), or Apple's and Google's clients to a request pace or to a fake answering from this test process in time, run
# after the others and one test at a time: on two shared cores, the rest of the suite running beside them would only
# measure the machine (LedgerAPITests' two servers answering forty concurrent requests ran out of the HTTP client's
# connection wait there). Everything else runs in parallel first.
timed='GooglePlayAPITests|GoogleNotificationAPITests|GoogleAccessTokensTests|ConsumptionAnswerTests|AppleActionsTests|LedgerAPITests|AbuseRunTests|OutageTests|ConnectionTests|StrangerCostTests|AppStoreServerAPITests|ServerAPIAnswersTests|NotificationAPITests|ProxyAPITests|AppleAPITests|WebhookManagementTests|NotificationSetupPageTests|CustomerImportTests|StandingReadTests'
# At most 24 tests at once in the parallel run (Swift Testing starts every test at once otherwise). Unbounded, the
# test process held up to 1,490 open descriptors, and Foundation's `Process.run()` crashed in `memcpy` three times
# while launching commands, reading past a page's end beside descriptor names (1355, 1356) of its listing of
# /proc/self/fd; we take the descriptor count for the cause (docs/performance.md, "Test runs and open descriptors").
# Bounded, the peak is about 260, and the run is faster (147 s against 190 s here).
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-24}
if [ -n "${SWIFT_TEST_ARGS:-}" ] && [ "${CI:-}" = true ]; then
    # A chosen subset skips the time-bound phase, the simulator, the contract, the recipes and the browser.
    echo "CI: SWIFT_TEST_ARGS is not taken under CI=true (every phase must run)" >&2
    exit 1
fi
if [ -n "${SWIFT_TEST_ARGS:-}" ]; then
    log "testing (SQLite and PostgreSQL): $SWIFT_TEST_ARGS"
    # shellcheck disable=SC2086
    swift test --skip-build $SWIFT_TEST_ARGS
else
    log "testing (SQLite and PostgreSQL)"
    swift test --skip-build --skip "$timed|SimulationTests"
    log "testing the time-bound suites, one test at a time"
    swift test --skip-build --no-parallel --filter "$timed"
    # The money simulator (docs/testing.md): SIMULATION_SEEDS histories per store (2,000 by default), both stores at
    # once, alone on the machine.
    log "the money simulator: ${SIMULATION_SEEDS:-2000} histories per store (scripts/simulate.sh)"
    swift test --skip-build --filter 'SimulationTests\.'
fi

# The API's contract, the client recipes and the account screen in a browser, against the live `serve` binary just built: the OpenAPI document checked
# against the server both ways, schemathesis over every documented route, then every recipe in docs/recipes/ this
# machine can run (runtimes are installed from Debian packages under CI; a missing one is skipped with a reason).
if [ -z "${SWIFT_TEST_ARGS:-}" ]; then
    log "API contract: scripts/contract.sh"
    scripts/contract.sh "$(swift build --show-bin-path)"
    log "client recipes: scripts/recipes.sh"
    scripts/recipes.sh "$(swift build --show-bin-path)"
    log "the account screen in headless Chromium: scripts/browser.sh"
    scripts/browser.sh "$(swift build --show-bin-path)"
fi
