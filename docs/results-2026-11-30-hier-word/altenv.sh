#!/bin/bash
# altenv.sh LOOPS OUT VALUES...: alternates the values of one environment variable (VAR,
# default SKIFCH_CATCHUP: the experiment build of section 3) over near-gated jobs:
# benches/c/gasnet_bench.c (as scripts/gasnet-bench.sh builds it: run that once first) and
# the raw channels' latency and rate (the msgrate tool). Rows: impl (p<value> / rawp<value>),
# test, size, value, unit, loop. Prints per test and value the median and every figure.
set -u
loops=$1; out=$2; shift 2
var=${VAR:-SKIFCH_CATCHUP}
cd "$(dirname "$0")/../.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
bench=$rel/gasnet-bench/gasnet_bench
[ -x "$bench" ] || { echo "altenv: $bench missing (run scripts/gasnet-bench.sh once)" >&2; exit 2; }
gate_dir=$(mktemp -d)
. scripts/near-gate.sh
: >"$out"
for l in $(seq 1 "$loops"); do
    for v in "$@"; do
        echo "loop $l $var=$v: probe $(near_gate 0.1) us" >&2
        env "$var=$v" SKIFCH_WAIT=spin LD_LIBRARY_PATH="$rel" "$rel/skifrun" -n 2 -- \
            "$bench" -i "p$v" -t 0.5 -r 3 2>/dev/null | grep -E "msgrate|am_short_lat|,latency" | sed "s/\$/,$l/" >>"$out"
        env "$var=$v" "$rel/msgrate" --tests latency,msgrate --sizes 8 --target-s 0.2 --reps 3 \
            --csv "$gate_dir/raw.csv" --svg "$gate_dir/raw.svg" >/dev/null 2>&1
        grep -E "latency|msgrate" "$gate_dir/raw.csv" | grep -v '^#' | sed "s/^[^,]*,/rawp$v,/; s/\$/,$l/" >>"$out"
    done
done
python3 - "$out" <<'PY'
import csv, statistics as st, sys
d = {}
for r in csv.reader(open(sys.argv[1])):
    try:
        d.setdefault((r[1], r[0]), []).append(float(r[3]))
    except (IndexError, ValueError):
        pass
for k in sorted(d):
    print(k, "median %.4g" % st.median(d[k]), "n", len(d[k]), " ".join("%.3g" % x for x in d[k]))
PY
