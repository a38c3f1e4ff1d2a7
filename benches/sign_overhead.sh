#!/usr/bin/env bash
# Issue 3: the cost of each sign mechanism over the real-valued mechanism on the same public map
# (dense dp-signrp-* / idp-signrp-* vs dp-rp-g-opt, OPORP dp-signoporp-* / idp-signoporp-* vs
# dp-oporp, same k), end to end (e2e, e2e-sign) and for the privatisation alone (privatise,
# privatise-sign).
#
#   benches/sign_overhead.sh                  # run every comparison, then print the table
#   benches/sign_overhead.sh dense-1024 ...   # rerun only these chunks, then print the table
#   benches/sign_overhead.sh --table-only     # only print the table from the last results
#   DPRP_BENCH_CPU=1 benches/sign_overhead.sh # also privatisation in process CPU time (shared machines)
#
# Chunks: oporp-256 oporp-512 dense-256 dense-512 dense-1024. Each is its own `cargo bench`
# invocation holding the sign mechanisms and their real-valued counterpart, so every ratio compares
# numbers taken minutes apart at most. On a shared machine, the load average, the CPU time stolen by
# the hypervisor and any other process seen using > 20% CPU during the chunk are printed after it:
# rerun the chunks that were disturbed.
#
# The table reads criterion's median estimates (<target>/criterion/<group>/<mechanism>/<k>/new/
# estimates.json). The 20% criterion is meant for the "privatise" rows: a real-valued release writes
# 32x more bytes than a sign release, which flatters signs end to end.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
crit="${CRITERION_HOME:-${CARGO_TARGET_DIR:-$root/target}/criterion}"
all_chunks=(oporp-256 oporp-512 dense-256 dense-512 dense-1024)

regex() { # chunk -> criterion filter
    local map="${1%-*}" k="${1##*-}" names
    case "$map" in
        oporp) names='dp-oporp|dp-signoporp-rr|dp-signoporp-rr-smooth|idp-signoporp-g|idp-signoporp-rr' ;;
        dense) names='dp-rp-g-opt-rademacher|dp-signrp-rr|dp-signrp-rr-smooth|idp-signrp-g|idp-signrp-rr' ;;
        *) echo "unknown chunk $1 (expected one of ${all_chunks[*]})" >&2; exit 2 ;;
    esac
    echo "^(e2e|privatise)(-sign)?(-cpu)?/($names)/$k\$"
}

steal() { awk '/^cpu /{print $9}' /proc/stat; } # CPU time taken by the hypervisor (1/100 s)

run_chunk() {
    local chunk="$1" log pid st0
    log="$(mktemp)"
    st0="$(steal)"
    # Other CPU-heavy processes (lifetime %CPU > 20, i.e. busy since they started), every 2 s.
    (while true; do
        ps -eo pcpu=,comm= | awk '$1 > 20 && $2 !~ /^publish-/ {print $2}' >>"$log"
        sleep 2
    done) &
    pid=$!
    echo "== $chunk: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || true); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd "$root" && cargo bench --bench publish -- "$(regex "$chunk")")
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "== $chunk: load after: $(cut -d' ' -f1-3 /proc/loadavg); steal: $(($(steal) - st0))/100 s;" \
        "other busy processes seen: $(sort "$log" | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
    rm -f "$log"
}

if [[ "${1:-}" == "--table-only" ]]; then
    :
else
    chunks=("$@")
    [[ ${#chunks[@]} -gt 0 ]] || chunks=("${all_chunks[@]}")
    for c in "${chunks[@]}"; do
        regex "$c" >/dev/null
        run_chunk "$c"
    done
fi

median_ns() { # file -> median point estimate in ns (empty if missing)
    [[ -f "$1" ]] || return 0
    sed -E 's/.*"median":\{"confidence_interval":\{[^}]*\},"point_estimate":([-0-9.eE+]+).*/\1/' "$1"
}

echo
echo "median time per iteration (e2e: publish all of MNIST train; privatise: the first 20480 rows in"
echo "memory, wall time; privatise-cpu: the same in process CPU time, summed over threads)"
printf '%-13s %-24s %5s %12s %-24s %12s %7s\n' group mechanism k 'sign' 'real counterpart' 'real' ratio
for group in e2e privatise privatise-cpu; do
    case "$group" in
        privatise-cpu) sign_group=privatise-sign-cpu ;;
        *) sign_group="$group-sign" ;;
    esac
    for dir in "$crit/$sign_group"/*/*/; do
        [[ -d "$dir" ]] || continue
        k="$(basename "$dir")"
        mech="$(basename "$(dirname "$dir")")"
        case "$mech" in
            *oporp*) real=dp-oporp ;;
            *) real=dp-rp-g-opt-rademacher ;;
        esac
        s="$(median_ns "$dir/new/estimates.json")"
        r="$(median_ns "$crit/$group/$real/$k/new/estimates.json")"
        [[ -n "$s" ]] || continue
        awk -v g="$group" -v m="$mech" -v k="$k" -v rn="$real" -v s="$s" -v r="$r" 'BEGIN {
            if (r == "") { printf "%-13s %-24s %5s %10.1fms %-24s %12s %7s\n", g, m, k, s/1e6, rn, "missing", "-"; exit }
            ratio = s / r
            printf "%-13s %-24s %5s %10.1fms %-24s %10.1fms %7.2f%s\n", g, m, k, s/1e6, rn, r/1e6, ratio, \
                (g ~ /^privatise/ && ratio > 1.2) ? "  > 1.2" : ""
        }'
    done | sort -k1,1 -k3,3n -k2,2
done
