#!/usr/bin/env bash
# gasnet-callgrind.sh: instructions per operation on gasnet-shim's hot paths (issue 20,
# "Speed"), from callgrind, which counts exactly whatever the machine's load. Probe:
# benches/c/gasnet_np_loop.c (2 ranks over shm, the direct path), built with the
# skifch-seq.mak fragment. Each figure is a difference of a run with N and one with 2N
# operations, divided by N, so start-up and teardown cancel:
#   * inclusive counts of the library's own calls (callgrind_annotate --inclusive):
#     rank 0's AM Short request (gasnetc_am_request), the target's dispatch of it (on_am,
#     with the handler and its ReplyShort0), the requester's dispatch of the reply and
#     the whole poll that found it (receive, dispatch, RecvComp);
#     an 8-byte Medium request (`copy 8`: windows of 64) and its dispatch at the target;
#   * an 8-byte gex_RMA_PutBlocking / GetBlocking: inclusive, and rank 0's whole program
#     (rank 1 waits in the final barrier; the figure skifshmem's callgrind.sh gives for
#     shmem_putmem, but it moves by ~20 between runs with the barrier's polls);
#   * an empty gasnet_AMPoll: inclusive, and rank 0's whole program.
# The send rows leave out the futex wake-ups of a receiver asleep (see nowake).
#
#   scripts/gasnet-callgrind.sh        # build (release, $CARGO_TARGET_DIR or target/), run, print
#
# Environment: CG_NO_BUILD=1 (use what is built), CG_N [4000], CG_OUT (keep the files there),
# CG_OPTS (more valgrind options, e.g. --dump-instr=yes for scripts/cg-asm.py).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
command -v valgrind >/dev/null || { echo "gasnet-callgrind.sh: valgrind not found" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
rel=$target/release
n=${CG_N:-4000}
if [ -n "${CG_OUT:-}" ]; then
    out=$CG_OUT
    mkdir -p "$out"
else
    out=$(mktemp -d /tmp/gasnet-cg.XXXXXX)
    trap 'rm -rf "$out"' EXIT
fi
if [ "${CG_NO_BUILD:-0}" != 1 ]; then
    cargo build --release --quiet -p gasnet-shim -p skifrun
fi
gasnet-shim/scripts/fragments.sh "$rel" "$out/fragments"
cat >"$out/Makefile" <<EOF
include $out/fragments/skifch-conduit/skifch-seq.mak
\$(OUT): $root/benches/c/gasnet_np_loop.c
	\$(GASNET_CC) \$(GASNET_CPPFLAGS) \$(GASNET_CFLAGS) -O2 -g \$< -o \$@ \$(GASNET_LDFLAGS) \$(GASNET_LIBS)
EOF
make -s -B -f "$out/Makefile" OUT="$out/np_loop"

fail() { echo "gasnet-callgrind.sh: $*" >&2; exit 1; }
two() { # two LABEL ARGS...: a 2-rank run of the probe under callgrind, files LABEL.<rank>
    local label=$1
    shift
    "$rel/skifrun" -n 2 --timeout 600 -- valgrind --tool=callgrind ${CG_OPTS:-} \
        --callgrind-out-file="$out/$label.%q{SKIFCH_RANK}" "$out/np_loop" "$@" \
        >"$out/$label.log" 2>&1 || { cat "$out/$label.log" >&2; fail "np_loop $* failed"; }
}
total() {
    awk '/^summary:/ { s = $2 } /^totals:/ { t = $2 } END { print (s != "" ? s : t) }' "$1"
}
# Inclusive instructions of the functions whose name matches the regex $2 (the largest entry).
incl() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk -v re="$2" '{
            for (i = 2; i <= NF; i++)
                if ($i ~ re) { c = $1; gsub(/,/, "", c); if (c + 0 > best) best = c + 0 }
        } END { print best + 0 }'
}
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / n }'; }
pair() { # pair LABEL SIZE MODE
    two "$1.a" "$n" "$2" "$3"
    two "$1.b" $((2 * n)) "$2" "$3"
}
fn() { # fn LABEL RANK REGEX: per-operation inclusive count
    per "$(incl "$out/$1.a.$2" "$3")" "$(incl "$out/$1.b.$2" "$3")" "$n"
}
whole() { per "$(total "$out/$1.a.0")" "$(total "$out/$1.b.0")" "$n"; }
# fn without the futex wake-ups of a receiver that went to sleep (callgrind's slow ranks
# sleep at random; every send that finds a sleeper pays a syscall, ~±50 per operation)
wake=':skifch_drivers::shm::lane::Tx::wake$'
nowake() { echo $(($(fn "$1" "$2" "$3") - $(fn "$1" "$2" "$wake"))); }

echo "gasnet-callgrind: N=$n and 2N, in $out" >&2
pair short 0 short
pair med 8 copy
pair put 8 put
pair get 8 get
pair poll 0 poll
on_am=':gasnet::am::on_am$'
# The endpoint's poll once the driver said a message is there (older builds: service_with;
# the name is split at its space, so the pattern matches its second half).
rpoll='skifch::proto::Endpoint<P,C>>::(poll_up_to|service_with)$'
rev=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
git diff --quiet HEAD 2>/dev/null || rev="$rev+changes"
echo "Instructions per operation (callgrind, $(valgrind --version), commit $rev, N=$n)"
echo
echo "| operation | instructions |"
echo "| --- | ---: |"
echo "| AM Short: requester \`gasnetc_am_request\` | $(nowake short 0 ':gasnetc_am_request(_fast)?$') |"
echo "| AM Short: target's dispatch (\`on_am\`, handler and its \`ReplyShort0\`) | $(nowake short 1 "$on_am") |"
echo "| AM Short: … of which \`gasnetc_am_reply\` | $(nowake short 1 ':gasnetc_am_reply(_fast)?$') |"
echo "| AM Short: requester's dispatch of the reply (\`on_am\`) | $(fn short 0 "$on_am") |"
# Since GASNET_BLOCKUNTIL's step receives without asking the driver first (2026-11-29),
# that poll is inlined into the wait step with the empty ones: no function to count.
rp=$(fn short 0 "$rpoll")
case $rp in 0 | -0) rp='— (inlined into the wait step with its empty polls)';; esac
echo "| AM Short: requester's poll that dispatched the reply (receive, \`on_am\`, RecvComp) | $rp |"
echo "| AM Medium 8 B: sender \`gasnetc_am_request\` | $(nowake med 0 ':gasnetc_am_request(_fast)?$') |"
echo "| AM Medium 8 B: target's dispatch (\`on_am\` with the handler) | $(fn med 1 "$on_am") |"
echo "| 8 B \`gex_RMA_PutBlocking\` (inclusive; rank 0 whole program) | $(fn put 0 ':gex_RMA_PutBlocking$') ($(whole put)) |"
echo "| 8 B \`gex_RMA_GetBlocking\` (inclusive; rank 0 whole program) | $(fn get 0 ':gex_RMA_GetBlocking$') ($(whole get)) |"
echo "| empty \`gasnet_AMPoll\` (inclusive; rank 0 whole program) | $(fn poll 0 ':gasnet_AMPoll$') ($(whole poll)) |"
