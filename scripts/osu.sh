#!/usr/bin/env bash
# osu.sh -- the OSU Micro-Benchmarks (OMB) against mpi-lite: builds every MPI program of a
# user-supplied OMB source tree except the one-sided ones (point-to-point, blocking,
# non-blocking, neighbourhood and persistent collectives, startup) with mpi-lite's mpicc,
# unmodified, runs each under mpi-lite's mpiexec and prints a pass/fail table.
#
#   scripts/osu.sh [OPTIONS] OSU_SRC_DIR       (OSU_SRC_DIR: the release tarball unpacked)
#
# Options:
#   --build DIR      build directory (default /tmp/osu-mpilite/<driver>); rebuilt if missing
#   --driver NAME    skifrun driver: shm (default) or fpga-model (tiny sizes: 1-64 B, a few
#                    iterations; the device model is slow)
#   --only REGEX     run only the programs whose name matches (e.g. 'latency|allreduce')
#   --compare        also build the same sources with Open MPI (mpicc.openmpi, run by
#                    mpirun.openmpi --bind-to core) and MPICH (mpicc.mpich, mpiexec.mpich
#                    -bind-to core, UCX_TLS=sm,self) and print osu_latency, osu_bw, osu_mbw_mr,
#                    osu_allreduce, osu_iallreduce and osu_ibarrier of all three side by side
#                    (median of $REPS runs, default 3, the three MPIs taking turns; noisy on
#                    a shared machine: the load average is printed with them, and
#                    $OSU_QUIET_LOAD makes it wait up to $OSU_QUIET_WAIT s for a lower one)
#
# Building: with a `configure` script (every release tarball) the tree is copied to the
# build directory and built by `./configure CC=<mpicc> CXX=<mpicxx>` and `make`; without one
# (a bare checkout of the c/ sources) the util/ files and each program are compiled directly
# with -DPACKAGE_VERSION from configure.ac. Rank counts: point-to-point 2 (osu_mbw_mr and
# osu_multi_lat also 4; osu_latency_mt with 2, 4 and 2:2 threads), collectives 2, 3 and 4
# (neighbourhood ones 3 and 4: their default ring needs 3), startup 2 and 4. Programs
# whose help lists `-c, --validation` (OMB 6 and later) run with it. Each run has a limit of
# $OSU_TIMEOUT seconds (default 300). $OSU_VERSION overrides the version (PACKAGE_VERSION)
# when the tree has no configure.ac.
#
# Needs the release build (`cargo build --release -p skifmpi -p skifrun`). Prints one line
# per run and `N passed, M failed`; exits 1 if any build or run failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
driver=shm
build=""
only=""
compare=0
src=""
while [ $# -gt 0 ]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --driver) driver=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --compare) compare=1; shift ;;
        -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
        -*) echo "osu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) src=$1; shift ;;
    esac
done
if [ -z "$src" ] || [ ! -d "$src" ]; then
    echo "osu.sh: give the OSU Micro-Benchmarks source directory (see --help)" >&2
    exit 2
fi
src=$(cd "$src" && pwd)
case $driver in shm | fpga-model) ;; *) echo "osu.sh: driver $driver: use shm or fpga-model" >&2; exit 2 ;; esac
build=${build:-/tmp/osu-mpilite/$driver}
timeout_s=${OSU_TIMEOUT:-300}
reps=${REPS:-3}
lite_bin=$root/mpi-lite/bin/mpi
if [ ! -x "$root/target/release/skifrun" ]; then
    echo "osu.sh: $root/target/release/skifrun missing: cargo build --release -p skifmpi -p skifrun" >&2
    exit 1
fi

version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$src/configure.ac" 2>/dev/null | head -1)
version=${OSU_VERSION:-${version:-unknown}}

# build_tree CC CXX DIR: builds the MPI programs of $src into DIR, lists them in DIR/programs
build_tree() {
    local cc=$1 cxx=$2 dir=$3
    if [ -s "$dir/programs" ]; then return 0; fi
    mkdir -p "$dir"
    if [ -x "$src/configure" ]; then
        rm -rf "$dir/tree" && cp -a "$src" "$dir/tree" || return 1
        (cd "$dir/tree" && ./configure CC="$cc" CXX="$cxx" >"$dir/configure.log" 2>&1 &&
            make -k -j2 >"$dir/make.log" 2>&1)
        local rc=$?
        [ $rc -eq 0 ] || echo "osu.sh: configure/make with $cc exited $rc (see $dir/*.log); running what was built" >&2
        find "$dir/tree" -type f -perm -u+x -name 'osu_*' -path '*mpi/*' ! -path '*one-sided*' \
            ! -name '*.c' ! -name '*.o' | sort >"$dir/programs"
        # programs the Makefiles tried to build and could not (make -k went on): a source
        # named on a compiler error line, or a link (`-o .../osu_x`, or automake's quiet
        # `CCLD osu_x`) that left no executable; what configure left out is not attempted
        {
            grep -oE '[a-z_0-9/]*osu_[a-z_0-9]+\.c:[0-9]+(:[0-9]+)?: error' "$dir/make.log" |
                sed 's/\.c:.*//'
            grep -oE '(-o +|CCLD +)[^ ]*osu_[a-z_0-9]+( |$)' "$dir/make.log" |
                sed -E 's/^(-o|CCLD) +//; s/ $//'
        } | grep -v one-sided | sort -u | while read -r p; do
            grep -q "/$(basename "$p")\$" "$dir/programs" || echo "$p"
        done >"$dir/nobuild"
        [ -s "$dir/nobuild" ] && return 1
    else
        local util
        util=$(ls -d "$src/c/util" "$src/util" 2>/dev/null | head -1)
        [ -n "$util" ] || { echo "osu.sh: no configure and no c/util or util/ in $src" >&2; return 1; }
        local flags=(-O2 "-DPACKAGE_VERSION=\"$version\"" "-I$util") objs=() f o bad=0
        mkdir -p "$dir/obj" "$dir/bin"
        for f in "$util"/osu_util*.c; do
            case $f in *pgas*) continue ;; esac
            o=$dir/obj/$(basename "$f" .c).o
            "$cc" "${flags[@]}" -c "$f" -o "$o" >>"$dir/make.log" 2>&1 ||
                { echo "osu.sh: $f does not compile with $cc (see $dir/make.log)" >&2; return 1; }
            objs+=("$o")
        done
        : >"$dir/programs"
        while read -r f; do
            o=$dir/bin/$(basename "$f" .c)
            if "$cc" "${flags[@]}" "$f" "${objs[@]}" -o "$o" -lm -lpthread >>"$dir/make.log" 2>&1; then
                echo "$o" >>"$dir/programs"
            else
                echo "osu.sh: $f does not build with $cc (see $dir/make.log)" >&2
                echo "$f" >>"$dir/nobuild"
                bad=$((bad + 1))
            fi
        done < <(find "$(dirname "$util")/mpi" -name 'osu_*.c' \
            \( -path '*pt2pt*' -o -path '*collective*' -o -path '*startup*' \) | sort)
        [ $bad -eq 0 ] || return 1
    fi
    [ -s "$dir/programs" ]
}

# plan PROG: lines "ranks|arguments" for one program (sizes and iterations kept small)
plan() {
    local p=$1 sm=1048576 it=100 bi=5 ci=20 lat
    if [ "$driver" = fpga-model ]; then sm=64; it=10; bi=2; ci=5; fi
    lat="-m $sm -i $it -x 5"
    case $p in
        osu_latency_mt*) for t in 2 4 2:2; do echo "2|-t $t -m $((sm < 65536 ? sm : 65536)) -i $it -x 5"; done ;;
        osu_mbw_mr*) echo "2|-m $sm -i $bi -x 2"; echo "4|-m $sm -i $bi -x 2" ;;
        osu_multi_lat*) echo "2|$lat"; echo "4|$lat" ;;
        osu_bw* | osu_bibw*) echo "2|-m $sm -i $bi -x 2" ;;
        osu_latency*) echo "2|$lat" ;;
        osu_hello | osu_init) echo "2|"; echo "4|" ;;
        osu_barrier | osu_ibarrier) for n in 2 3 4; do echo "$n|-i $((ci * 5)) -x 5"; done ;;
        # the default neighbourhood (-N cart:1:1, periodic) needs 3 ranks in a ring: on 2
        # the program stops with "radius ... greater than the half of the minimum dimension"
        osu_neighbor* | osu_ineighbor*) for n in 3 4; do echo "$n|-m $((sm < 65536 ? sm : 65536)) -i $ci -x 5"; done ;;
        *) for n in 2 3 4; do echo "$n|-m $((sm < 65536 ? sm : 65536)) -i $ci -x 5"; done ;;
    esac
}

# Programs that need an extra launcher argument or environment are none: mpi-lite grants
# MPI_THREAD_MULTIPLE when asked (osu_latency_mt) and survives fork() (osu_latency_mp).
lite_run() { # NP PROG ARGS...
    local np=$1
    shift
    "$lite_bin/mpiexec" -n "$np" --driver "$driver" --timeout "$timeout_s" -- "$@" </dev/null
}

echo "# OSU Micro-Benchmarks $version from $src; mpi-lite $(git -C "$root" rev-parse --short HEAD 2>/dev/null), driver $driver; load average $(cut -d' ' -f1-3 /proc/loadavg)"
if ! build_tree "$lite_bin/mpicc" "$lite_bin/mpicxx" "$build/mpi-lite"; then
    failed_build=1
else
    failed_build=0
fi
[ -s "$build/mpi-lite/programs" ] || { echo "osu.sh: nothing was built (see $build/mpi-lite)" >&2; exit 1; }

pass=0
fail=0
logs=$build/logs
mkdir -p "$logs"
printf '%-26s %5s  %-30s %-6s %s\n' program ranks arguments result seconds
while read -r prog; do
    name=$(basename "$prog")
    [ -z "$only" ] || [[ $name =~ $only ]] || continue
    val=""
    if lite_run 2 "$prog" -h 2>/dev/null | grep -q -- '-c, --validation'; then val="-c"; fi
    while IFS='|' read -r np args; do
        log=$logs/$name.$np.$(echo "$args" | tr -c 'a-zA-Z0-9' _).log
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086
        lite_run "$np" "$prog" $val $args >"$log" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        result=pass
        if [ $rc -ne 0 ]; then
            result="FAIL(rc=$rc)"
        elif grep -qE 'Fail|VALIDATION ERROR|MPI call failed' "$log"; then
            result="FAIL(data)"
        elif ! grep -qE '^(# OSU|[0-9]+ +[0-9.]+|nprocs:|This is a test)' "$log"; then
            result="FAIL(no output)"
        fi
        if [ "$result" = pass ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
        printf '%-26s %5s  %-30s %-6s %.1f\n' "$name" "$np" "$val $args" "$result" \
            "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
        [ "$result" = pass ] || sed 's/^/    | /' "$log" | tail -8
    done < <(plan "$name")
done <"$build/mpi-lite/programs"
if [ -s "$build/mpi-lite/nobuild" ]; then
    fail=$((fail + $(wc -l <"$build/mpi-lite/nobuild")))
    sed 's/^/did not build: /' "$build/mpi-lite/nobuild"
fi
echo "$pass passed, $fail failed"

if [ $compare -eq 1 ]; then
    # The peers, built from the same sources; each figure the median of $reps runs.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_TLS=sm,self
    build_tree mpicc.openmpi mpicxx.openmpi "$build/openmpi" || echo "osu.sh: Open MPI build failed" >&2
    build_tree mpicc.mpich mpicxx.mpich "$build/mpich" || echo "osu.sh: MPICH build failed" >&2
    runner() { # IMPL NP PROG ARGS...
        local impl=$1 np=$2
        shift 2
        case $impl in
            mpi-lite) lite_run "$np" "$@" ;;
            openmpi) timeout "$timeout_s" mpirun.openmpi -np "$np" --bind-to core "$@" </dev/null ;;
            mpich) timeout "$timeout_s" mpiexec.mpich -np "$np" -bind-to core "$@" </dev/null ;;
        esac
    }
    # Each spec: program, size, column of its table (2: latency, bandwidth or the non-blocking
    # programs' overall time; 3: osu_mbw_mr's messages/s; 4: the non-blocking programs'
    # "Pure Comm." time, that is I<collective> + MPI_Wait with nothing between), unit, args.
    # osu_ibarrier prints no size column: its columns are one to the left.
    # $OSU_QUIET_LOAD: wait (at most $OSU_QUIET_WAIT seconds, default 1800) for the 1-minute
    # load average to drop below it before measuring
    if [ -n "${OSU_QUIET_LOAD:-}" ]; then
        waited=0
        while awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v q="$OSU_QUIET_LOAD" 'BEGIN { exit !(l >= q) }' &&
            [ "$waited" -lt "${OSU_QUIET_WAIT:-1800}" ]; do
            sleep 10
            waited=$((waited + 10))
        done
        echo "# waited ${waited} s for a load average below $OSU_QUIET_LOAD"
    fi
    echo
    echo "# comparison, median of $reps runs; load average $(cut -d' ' -f1-3 /proc/loadavg) (noisy: a shared 2-vCPU machine)"
    printf '%-16s %8s %-14s %14s %14s %14s\n' program size unit mpi-lite openmpi mpich
    for spec in "osu_latency 8 2 us -m 8:8 -i 20000 -x 1000" "osu_latency 4096 2 us -m 4096:4096 -i 10000 -x 500" \
        "osu_bw 8 2 MB/s -m 8:8 -i 200 -x 10" "osu_bw 65536 2 MB/s -m 65536:65536 -i 100 -x 5" \
        "osu_mbw_mr 8 3 msg/s -m 8:8 -i 200 -x 10" "osu_mbw_mr 64 3 msg/s -m 64:64 -i 200 -x 10" \
        "osu_allreduce 8 2 us -m 8:8 -i 20000 -x 1000" \
        "osu_iallreduce 8 4 us(pure) -m 8:8 -i 10000 -x 500" "osu_iallreduce 8 2 us(overall) -m 8:8 -i 10000 -x 500" \
        "osu_ibarrier - 4 us(pure) -i 10000 -x 500" "osu_ibarrier - 2 us(overall) -i 10000 -x 500"; do
        read -r prog size col unit args <<<"$spec"
        line=$(printf '%-16s %8s %-14s' "$prog" "$size" "$unit")
        declare -A vals=([mpi-lite]="" [openmpi]="" [mpich]="")
        for _ in $(seq "$reps"); do # the three take turns, so they share the machine's moods
            for impl in mpi-lite openmpi mpich; do
                bin=$(grep "/$prog\$" "$build/$impl/programs" 2>/dev/null | head -1)
                [ -n "$bin" ] || continue
                # shellcheck disable=SC2086
                v=$(runner "$impl" 2 "$bin" $args 2>/dev/null |
                    awk -v s="$size" -v c="$col" '
                        s == "-" && $1 ~ /^[0-9.]+$/ { print $(c - 1); exit }
                        $1 == s && NF >= c { print $c; exit }')
                [ -n "$v" ] && vals[$impl]="${vals[$impl]} $v"
            done
        done
        for impl in mpi-lite openmpi mpich; do
            med=$(echo "${vals[$impl]}" | tr ' ' '\n' | grep . | sort -g |
                awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }')
            line="$line $(printf '%14s' "$med")"
        done
        echo "$line"
    done
    echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
[ $fail -eq 0 ] && [ $failed_build -eq 0 ]
