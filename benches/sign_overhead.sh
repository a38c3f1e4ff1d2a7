#!/usr/bin/env bash
# Issue 3: the cost of each sign mechanism over the real-valued mechanism on the same public map
# (dense dp-signrp-* / idp-signrp-* vs dp-rp-g-opt, OPORP dp-signoporp-* / idp-signoporp-* vs
# dp-oporp, same k), end to end and for the privatisation alone.
#
#   benches/sign_overhead.sh               # run the e2e and privatise benches, then print the table
#   benches/sign_overhead.sh --table-only  # only print the table from the last run's results
#
# Extra arguments are passed to criterion. The load average is printed before and after the run:
# on a shared machine, rerun if it was high. The table reads criterion's median estimates
# (target/criterion/<group>/<mechanism>/<k>/new/estimates.json). The 20% criterion is meant for the
# "privatise" rows: a real-valued release writes 32× more bytes, which flatters signs end to end.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
crit="${CRITERION_HOME:-${CARGO_TARGET_DIR:-$root/target}/criterion}"

if [[ "${1:-}" == "--table-only" ]]; then
    shift
else
    echo "load before: $(uptime)"
    (cd "$root" && cargo bench --bench publish -- 'e2e|privatise' "$@")
    echo "load after:  $(uptime)"
fi

median_ns() { # file -> median point estimate in ns (empty if missing)
    [[ -f "$1" ]] || return 0
    sed -E 's/.*"median":\{"confidence_interval":\{[^}]*\},"point_estimate":([-0-9.eE+]+).*/\1/' "$1"
}

printf '\n%-14s %-24s %5s %12s %-24s %12s %7s\n' group mechanism k 'sign median' 'real counterpart' \
    'real median' ratio
for group in e2e privatise; do
    for dir in "$crit/$group-sign"/*/*/; do
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
            if (r == "") { printf "%-14s %-24s %5s %10.1fms %-24s %12s %7s\n", g, m, k, s/1e6, rn, "missing", "-"; exit }
            ratio = s / r
            printf "%-14s %-24s %5s %10.1fms %-24s %10.1fms %7.2f%s\n", g, m, k, s/1e6, rn, r/1e6, ratio, \
                (g == "privatise" && ratio > 1.2) ? "  > 1.2" : ""
        }'
    done | sort -k1,1 -k3,3n -k2,2
done
