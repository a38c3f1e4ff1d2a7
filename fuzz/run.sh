#!/usr/bin/env bash
# Run every fuzz target (or those named) for RUNS executions each, one after the other, in one
# process each, with a 2 GiB memory limit (RSS and any single allocation) and a 10 s per-input timeout.
# Not part of CI. Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#
#   fuzz/run.sh                      # all targets, 10^7 executions each
#   RUNS=1000000 fuzz/run.sh npy csv # two targets, 10^6 executions each
#
# The committed seeds (fuzz/corpus/<target>) are read only; what the fuzzer finds goes to
# fuzz/target/corpus/<target> (kept between runs, not committed). A crash, hang (timeout) or
# out-of-memory leaves its input in fuzz/artifacts/<target>/ and makes this script exit non-zero;
# minimise it with `cargo +nightly fuzz tmin --fuzz-dir fuzz -O -a <target> <artifact>` and add
# it to tests/fuzz_regressions.rs.
set -uo pipefail
cd "$(dirname "$0")"

RUNS="${RUNS:-10000000}"
# No leak check and no quarantine: leaks are not what this looks for, and both cost more than
# half of the executions; out-of-bounds accesses are still caught.
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=0:detect_leaks=0}"
ALL=(native npy fvecs bvecs libsvm csv idx release hnsw record parquet parquet_release)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

max_len() {
    case "$1" in
        release | hnsw | parquet | parquet_release) echo 16384 ;;
        *) echo 8192 ;;
    esac
}

cargo +nightly fuzz build --fuzz-dir . -O -a || exit 2

# Per-input time limit: 10 s for every target. The Parquet targets had 30 s while the parquet
# crate's own thrift decoder took over 10 s under AddressSanitizer on one hostile ~1 KB footer;
# dprp's footer walk (data::parquet::footer) now refuses that footer in milliseconds, and in
# session 18 the grown corpora of both Parquet targets (11 172 and 9 443 inputs) replayed with no
# input over 1 s, and 600 s of fuzzing each at 10 s found no timeout.
time_limit() {
    echo 10
}

failed=0
summary=()
for t in "${TARGETS[@]}"; do
    mkdir -p "target/corpus/$t" "artifacts/$t"
    log="target/fuzz-$t.log"
    before=$(ls "artifacts/$t" | wc -l)
    start=$(date +%s)
    cargo +nightly fuzz run --fuzz-dir . -O -a "$t" "target/corpus/$t" "corpus/$t" -- \
        -runs="$RUNS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout="$(time_limit "$t")" \
        -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="artifacts/$t/" \
        >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    found=$(($(ls "artifacts/$t" | wc -l) - before))
    line="$t: ${execs:-?} executions in ${secs} s, exit $rc, $found new artifact(s)"
    if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
        failed=1
        line="$line  <-- FAILED (see fuzz/$log)"
    fi
    echo "$line"
    summary+=("$line")
done
echo "---"
printf '%s\n' "${summary[@]}"
exit $failed
