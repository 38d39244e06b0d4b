#!/usr/bin/env bash
# The money simulator (docs/testing.md): seeded random histories played against the real service in process, on
# SQLite and on a throwaway PostgreSQL, every invariant checked after every step.
#
#   scripts/simulate.sh [--seeds N] [--first-seed S] [--seed S] [--store sqlite|postgres|both] [--trace]
#
# --seeds N        histories per store (default 2000, what CI runs)
# --first-seed S   the first seed of the run (default 1); `--first-seed random` draws one and prints it
# --seed S         one seed alone: its history is printed (with --trace, every request and answer too)
# --store          which stores (default both)
# A failure prints its seed and the shortest history that still fails. Uses the debug build of the tests (built here);
# RECEIPTVERIFY_TEST_POSTGRES_URL, when set, names the PostgreSQL server to use instead of starting one.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh

seeds=2000 first=1 one= store=both trace=0
while [ $# -gt 0 ]; do
    case "$1" in
        --seeds) seeds=$2; shift 2 ;;
        --first-seed) first=$2; shift 2 ;;
        --seed) one=$2; shift 2 ;;
        --store) store=$2; shift 2 ;;
        --trace) trace=1; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$store" in sqlite|postgres|both) ;; *) echo "--store must be sqlite, postgres or both" >&2; exit 2 ;; esac
[[ "$seeds" =~ ^[0-9]+$ ]] || { echo "--seeds must be a number" >&2; exit 2; }
if [ "$first" = random ]; then first=$(( (RANDOM << 15 | RANDOM) + 1 )); log "first seed $first"; fi
[[ "$first" =~ ^[0-9]+$ ]] || { echo "--first-seed must be a number or 'random'" >&2; exit 2; }
[ -z "$one" ] || [[ "$one" =~ ^[0-9]+$ ]] || { echo "--seed must be a number" >&2; exit 2; }

if [ "$store" != sqlite ] && [ -z "${RECEIPTVERIFY_TEST_POSTGRES_URL:-}" ]; then
    trap stop_postgres EXIT
    # As the test script runs it: durability is not what the simulator checks (a restart is a stop of the server).
    PG_EXTRA_OPTIONS="-c fsync=off" start_postgres
    export RECEIPTVERIFY_TEST_POSTGRES_URL
    RECEIPTVERIFY_TEST_POSTGRES_URL=$(postgres_url postgres)
fi

log "building the tests"
swift build --build-tests >/dev/null
export SIMULATION_SEEDS=$seeds SIMULATION_FIRST_SEED=$first SIMULATION_STORE=$store
[ -z "$one" ] || export SIMULATION_SEED=$one
[ "$trace" = 0 ] || export SIMULATION_TRACE=1
swift test --skip-build --filter 'SimulationTests\.'
