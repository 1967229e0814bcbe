#!/bin/sh
# MsgRate over mpi-lite beside raw SkifCh channels and the peers (Open MPI, MPICH), in one
# table and one plot. Builds the peers' unmodified msgrate_mpi.c with skif-mpicc, runs it
# under skifrun (each rank pinned to CPU = its rank, like the peers), appends its CSV to the
# peers' kept results and hands both to the benches' msgrate tool, which measures raw
# channels in the same run and merges everything (--peers).
#
#   sh mpi-lite/scripts/msgrate.sh [peers.csv]        # from the workspace root
#
# Environment: TARGET_S (0.3), REPS (5), TESTS (msgrate,latency), OUT (results/mpi-lite).
# Numbers on a shared 2-vCPU machine are noisy: look at the c2c probe summary on stderr.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
peers=${1:-$root/../shared/peers/results-2026-11-22.csv}
out=${OUT:-results/mpi-lite}
mkdir -p "$out"
cd "$root"
cargo build --release -q -p skifmpi -p skifch-drivers -p skifch-benches
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
SKIFMPI_LIBDIR=$root/target/release mpi-lite/bin/skif-mpicc -O2 -I "$root/../shared/peers" \
    "$root/../shared/peers/msgrate_mpi.c" -o "$build/msgrate_mpilite"
cat > "$build/pin.sh" <<'PIN'
#!/bin/sh
exec taskset -c "$SKIFCH_RANK" "$@"
PIN
chmod +x "$build/pin.sh"
target/release/skifrun -n 2 -- "$build/pin.sh" "$build/msgrate_mpilite" -i mpi-lite \
    -t "${TARGET_S:-0.3}" -r "${REPS:-5}" -T "${TESTS:-msgrate,latency}" > "$out/mpi-lite.csv"
cp "$peers" "$out/peers+mpi-lite.csv"
cat "$out/mpi-lite.csv" >> "$out/peers+mpi-lite.csv"
target/release/msgrate --tests msgrate,latency --target-s "${TARGET_S:-0.3}" \
    --reps "${REPS:-5}" --peers "$out/peers+mpi-lite.csv" \
    --csv "$out/msgrate.csv" --svg "$out/msgrate.svg"
