#!/usr/bin/env bash
# callgrind.sh: instructions per 8-byte operation on the three hot paths (issue 15, "Must not
# regress"): raw channel send / receive, mpi-lite MPI_Send + MPI_Recv, skifshmem shmem_putmem.
# Callgrind counts are exact and do not depend on the machine's load (only the run time does).
#
#   scripts/callgrind.sh            # build (release, into $CARGO_TARGET_DIR or target/), run, print
#
# Every figure but the rx rows is a whole-program difference: (instructions of the run with
# 2N operations - those of the run with N) / N, so start-up, MPI_Init/shmem_init, barriers and
# teardown cancel and no internal symbol name is relied on. The rx rows are the inclusive
# counts of the example's own functions (rx::fill, rx::drain, rx::tool_fill, rx::tool_drain),
# also differenced over two run lengths. 2-rank figures include the polls of a rank that
# waits for the other (the receiver finding its lane empty, PE 1 waiting in the barrier), so
# they move by a few percent between runs: those rows give the smallest of CG_REPEAT pairs of
# runs and the range.
#
# Environment (defaults in brackets):
#   CARGO_TARGET_DIR  where cargo builds; the C probes link the libraries from its release/
#   CG_NO_BUILD=1     use what is already built
#   CG_RX_BATCH [1000], CG_RX_ROUNDS [100]  rx: messages per fill, rounds (and 2x rounds)
#   CG_MPI_N [20000]  mpi_loop iterations (and 2x)          CG_SHMEM_N [20000]  puts (and 2x)
#   CG_WIN_N [2000]   mpi_loop windows of 64 messages (and 2x), the `window` rows
#   CG_REPEAT [5]     repeats of each 2-rank pair: "min (min-max)" is printed
#   CG_RMA_N [20000]  mpi_putloop operations (and 2x)
#   CG_ONLY           run only these sections (space-separated of: rx mpi shmem rma; default all)
#   CG_OUT            directory for the callgrind.out files and probes (default: a temp dir,
#                     removed at the end unless CG_OUT is given)
# Probes: benches/examples/rx.rs, benches/c/mpi_loop.c, benches/c/shmem_putloop.c,
# benches/c/mpi_putloop.c (the one-sided rows: rank 0's operations in one passive epoch; their
# headers describe them); figures of earlier days: benches/README.md "Instruction counts",
# mpi-lite/README.md "Instructions", shmem/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind not found" >&2; exit 1; }

target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
rel=$target/release
batch=${CG_RX_BATCH:-1000}
rounds=${CG_RX_ROUNDS:-100}
mpin=${CG_MPI_N:-20000}
shn=${CG_SHMEM_N:-20000}
repeat=${CG_REPEAT:-5}
rman=${CG_RMA_N:-20000}
winn=${CG_WIN_N:-2000}
only=" ${CG_ONLY:-rx mpi shmem rma} "
want() { [[ $only == *" $1 "* ]]; }
if [ -n "${CG_OUT:-}" ]; then
    out=$CG_OUT
    mkdir -p "$out"
else
    out=$(mktemp -d /tmp/callgrind.XXXXXX)
    trap 'rm -rf "$out"' EXIT
fi

if [ "${CG_NO_BUILD:-0}" != 1 ]; then
    echo "building (release, $target)" >&2
    # The launcher by name (whichever workspace crate holds it), then the C libraries and rx.
    cargo build --release --quiet --bin skifrun
    cargo build --release --quiet -p skifmpi -p shmem
    cargo build --release --quiet -p skifch-benches --example rx
fi
! want mpi || SKIFMPI_LIBDIR=$rel "$root/mpi-lite/bin/skif-mpicc" -O2 benches/c/mpi_loop.c -o "$out/mpi_loop"
! want shmem ||
    SKIFSHMEM_LIBDIR=$rel "$root/shmem/bin/skif-oshcc" -O2 benches/c/shmem_putloop.c -o "$out/putloop"
! want rma ||
    SKIFMPI_LIBDIR=$rel "$root/mpi-lite/bin/skif-mpicc" -O2 benches/c/mpi_putloop.c -o "$out/mpi_putloop"

fail() { echo "callgrind.sh: $*" >&2; exit 1; }
vg() { # vg OUTFILE PROGRAM ARGS...: one process under callgrind
    valgrind --tool=callgrind --callgrind-out-file="$1" "${@:2}" >"$1.log" 2>&1 ||
        { cat "$1.log" >&2; fail "${*:2} failed"; }
}
# Total instructions of a callgrind.out file (its summary line, else its totals line).
total() {
    local t
    t=$(awk '/^summary:/ { s = $2 } /^totals:/ { t = $2 } END { print (s != "" ? s : t) }' "$1" 2>/dev/null)
    [ -n "$t" ] || fail "no instruction total in $1"
    echo "$t"
}
# Inclusive instructions of a function of the rx example: the largest of callgrind_annotate's
# inclusive entries "<file>:rx::NAME" (the function's own entry; code inlined into it from
# other files gets entries of its own, which are parts of that one).
incl() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk -v re=":rx::$2(<.*)?\$" '{
            for (i = 2; i <= NF; i++)
                if ($i ~ re) { c = $1; gsub(/,/, "", c); if (c + 0 > best) best = c + 0 }
        } END { if (best > 0) print best }'
}
per() { # per COUNT_N COUNT_2N N: (COUNT_2N - COUNT_N) / N, one decimal
    [ -n "$1" ] && [ -n "$2" ] || fail "a count is missing (CG_OUT=DIR keeps the callgrind files)"
    awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", (b - a) / n }'; }
# "MIN" of one value, "MIN (MIN-MAX)" of several.
span() {
    printf '%s\n' "$@" | sort -g | awk 'NR == 1 { a = $1 } { b = $1 } END {
        if (NR > 1) printf "%s (%s-%s)\n", a, a, b; else print a }'
}
row() { [ -n "$2" ] || return 0; printf '| %s | %s |\n' "$1" "$2"; }

# 1. raw channel: rx 8 BATCH ROUNDS and 2*ROUNDS (one rank, its own lane).
declare -A rx
rxall=
if want rx; then
echo "rx: 8 B, $batch x $rounds and x $((2 * rounds)) messages" >&2
vg "$out/rx.a" "$rel/examples/rx" 8 "$batch" "$rounds"
vg "$out/rx.b" "$rel/examples/rx" 8 "$batch" $((2 * rounds))
nrx=$((batch * rounds))
for f in fill drain tool_fill tool_drain; do
    if command -v callgrind_annotate >/dev/null; then
        rx[$f]=$(per "$(incl "$out/rx.a" $f)" "$(incl "$out/rx.b" $f)" $nrx)
    else
        rx[$f]="n/a (no callgrind_annotate)"
    fi
done
rxall=$(per "$(total "$out/rx.a")" "$(total "$out/rx.b")" $nrx)
fi

# 2. mpi-lite: self (1-rank job, no launcher) and rate (2 ranks, one file per rank).
mpiself= rate0= rate1= win0= win1= dir0= msg0= msg1=
if want mpi; then
echo "mpi_loop: self and rate, $mpin and $((2 * mpin)) iterations" >&2
vg "$out/self.a" "$out/mpi_loop" "$mpin" self
vg "$out/self.b" "$out/mpi_loop" $((2 * mpin)) self
mpiself=$(per "$(total "$out/self.a")" "$(total "$out/self.b")" "$mpin")
fi
two() { # two LABEL PROGRAM ARGS...: a 2-rank run under skifrun, files LABEL.<rank>
    local label=$1
    shift
    "$rel/skifrun" -n 2 -- valgrind --tool=callgrind \
        --callgrind-out-file="$out/$label.%q{SKIFCH_RANK}" "$@" >"$out/$label.log" 2>&1 ||
        { cat "$out/$label.log" >&2; fail "skifrun -n 2 $* failed"; }
}
# pair LABEL N PROGRAM ARG [OPS]: "PROGRAM N ARG" and "PROGRAM 2N ARG" as 2-rank jobs,
# CG_REPEAT times; sets r0 and r1 to rank 0's and rank 1's instructions per operation
# ("min (range)"), an iteration being OPS operations (default 1).
pair() {
    local label=$1 n=$2 prog=$3 arg=$4 ops=${5:-1} i s0=() s1=()
    for ((i = 0; i < repeat; i++)); do
        two "$label.a" "$prog" "$n" "$arg"
        two "$label.b" "$prog" $((2 * n)) "$arg"
        s0+=("$(per "$(total "$out/$label.a.0")" "$(total "$out/$label.b.0")" $((n * ops)))")
        s1+=("$(per "$(total "$out/$label.a.1")" "$(total "$out/$label.b.1")" $((n * ops)))")
    done
    r0=$(span "${s0[@]}")
    r1=$(span "${s1[@]}")
}
if want mpi; then
pair rate "$mpin" "$out/mpi_loop" rate
rate0=$r0 rate1=$r1
# The osu_mbw_mr window (64 MPI_Isend / MPI_Irecv + MPI_Waitall, then an ack): per message.
pair window "$winn" "$out/mpi_loop" window 64
win0=$r0 win1=$r1
fi

# 3. skifshmem: putloop N 8 and 2N 8, direct (the shm driver's RMA) and message path.
if want shmem; then
echo "putloop: 8 B, $shn and $((2 * shn)) puts, direct and SKIFSHMEM_RMA=off" >&2
pair put "$shn" "$out/putloop" 8
dir0=$r0
export SKIFSHMEM_RMA=off
pair putmsg "$shn" "$out/putloop" 8
unset SKIFSHMEM_RMA
msg0=$r0 msg1=$r1
fi

# 4. mpi-lite one-sided: mpi_putloop N OP and 2N OP (MPI_Win_allocate, one passive epoch;
# rank 0 waits for nothing before its last flush, so one pair per operation is exact).
declare -A rma
rmaops="put get acc fop cas flush putflush lockput"
if want rma; then
echo "mpi_putloop: $rmaops, $rman and $((2 * rman)) operations" >&2
for op in $rmaops; do
    two "rma$op.a" "$out/mpi_putloop" "$rman" "$op"
    two "rma$op.b" "$out/mpi_putloop" $((2 * rman)) "$op"
    rma[$op]=$(per "$(total "$out/rma$op.a.0")" "$(total "$out/rma$op.b.0")" "$rman")
done
fi

rev=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
git diff --quiet HEAD 2>/dev/null || rev="$rev+changes"
echo >&2
echo "Instructions per 8-byte operation (callgrind, $(valgrind --version), commit $rev)"
echo
row "operation" "instructions"
row "---" "---:"
row "raw send: \`rx::fill\` per message" "${rx[fill]:-}"
row "raw receive + check + complete: \`rx::drain\` per message" "${rx[drain]:-}"
row "MsgRate tool's send: \`rx::tool_fill\` per message" "${rx[tool_fill]:-}"
row "MsgRate tool's receive: \`rx::tool_drain\` per message" "${rx[tool_drain]:-}"
row "rx whole program per message (the four loops, 2 sends + 2 receives)" "$rxall"
row "mpi-lite self \`MPI_Send\` + \`MPI_Recv\` (\`mpi_loop N self\`, 1 rank)" "$mpiself"
row "mpi-lite \`rate\`, 2 ranks: sender per \`MPI_Send\`" "$rate0"
row "mpi-lite \`rate\`, 2 ranks: receiver per \`MPI_Recv\`" "$rate1"
row "mpi-lite \`window\`, 2 ranks: sender per message (64 \`MPI_Isend\` + \`MPI_Waitall\`, the ack)" "$win0"
row "mpi-lite \`window\`, 2 ranks: receiver per message (64 \`MPI_Irecv\` + \`MPI_Waitall\`, the ack)" "$win1"
row "skifshmem \`shmem_putmem\` direct (RMA), PE 0 per put" "$dir0"
row "skifshmem \`shmem_putmem\` message path (\`SKIFSHMEM_RMA=off\`), PE 0 per put" "$msg0"
row "skifshmem message path, PE 1 (target applying) per put" "$msg1"
for op in $rmaops; do
    row "mpi-lite one-sided \`mpi_putloop N $op\`, rank 0 per iteration" "${rma[$op]:-}"
done
echo
echo "(rx: $batch x $rounds vs x $((2 * rounds)) messages; mpi_loop: $mpin vs $((2 * mpin)), window $winn vs $((2 * winn)) windows;" \
    "putloop: $shn vs $((2 * shn)); mpi_putloop: $rman vs $((2 * rman)), one pair;" \
    "2-rank rows: smallest of $repeat (range); sections: $only)"
