#!/usr/bin/env bash
# Builds the libFuzzer target and fuzzes ReceiptVerify's parsers for a bounded time (default 60 s), starting from
# a corpus made of the real receipts and JWS in the fixtures folder (decoded and raw). Exits non-zero on a crash.
#
# Usage: Fuzz/run.sh [SECONDS]      Env: RECEIPTVERIFY_FIXTURES (default ../shared/fixtures)
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
fixtures=${RECEIPTVERIFY_FIXTURES:-../../shared/fixtures}

swift build --product ReceiptFuzzer --scratch-path ../.build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
binary="$(swift build --product ReceiptFuzzer --scratch-path ../.build-fuzz --show-bin-path \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)/ReceiptFuzzer"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
if [ -d "$fixtures" ]; then
    for file in "$fixtures"/receipts/*.b64 "$fixtures"/jws/*.jws "$fixtures"/tampered/*; do
        [ -f "$file" ] || continue
        name=$(basename "$file")
        cp "$file" "$corpus/$name.text"
        base64 -d "$file" > "$corpus/$name.bin" 2>/dev/null || rm -f "$corpus/$name.bin"
    done
fi
seeds=$(ls "$corpus" | wc -l)
if [ "$seeds" -eq 0 ] && [ "${CI:-}" = true ]; then
    echo "CI: the fuzz corpus is empty: no fixtures at $fixtures (set RECEIPTVERIFY_FIXTURES)" >&2
    exit 1
fi
echo "fuzzing for ${seconds}s from $seeds seeds"
"$binary" "$corpus" -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=4096 -timeout=10 -print_final_stats=1
