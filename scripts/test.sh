#!/usr/bin/env bash
# The whole test suite (README "Tests"; .ci/run calls exactly this).
#   1. cargo test --workspace: unit, doc and integration tests, including real multi-process
#      jobs through skifrun (conformance suite on shm, launcher, faults, C programs compiled
#      with cc against include/skifch.h and run under skifrun);
#   1b. clippy with the workspace lints as errors (SAFETY comments, safety docs, docs),
#       and rustdoc with warnings as errors (broken links);
#   2. Miri on the shm lanes (skifch-drivers: ring_props, corrupt, conformance_local) and
#      on the core crate (channel layer, loopback job, proto) with small counts;
#   3. loom model of the lane code itself: publication, wrap, back-pressure, lazy tail
#      publication and the wake-up protocol (skifch-drivers tests/loom_lane.rs).
# Steps 2-3 need the nightly toolchain with miri (rustup component add --toolchain nightly
# miri rust-src); without it they are reported as SKIPPED and the script still fails if
# anything that ran failed. Set SKIP_MIRI=1 / SKIP_LOOM=1 to leave them out on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
# Disk: a full run builds every crate's tests, five C libraries (static and shared) and
# the C test programs linked against them; with full debug info and incremental state that
# was over 9 GB of target/ before clippy, Miri and loom, more than a CI machine's disk
# holds. Line tables keep backtraces' file:line; a one-shot build has no use for
# incremental state. Both are inherited by the nested cargo builds of skifch-testing, so
# they reuse these artifacts. A caller's own settings win.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
step() { printf '\n=== %s (%ds)\n' "$*" $((SECONDS - t0)); }

step "cargo test --workspace"
# A CI log may be shown from its tail only: a failure's own output is printed again at the
# end, under the test binary it came from.
log=target/test-workspace.log
mkdir -p target
if ! cargo test --workspace --no-fail-fast 2>&1 | tee "$log"; then
    step "cargo test --workspace FAILED; the failures again:"
    awk '/^ *(Running|Doc-tests) /{bin=$0} /^failures:$/{if(!inf){print bin}; inf=1}
         inf{print} /^test result: FAILED/{inf=0}
         /process didn.t exit successfully/{print bin; print}' "$log" | tail -c 20000
    exit 101
fi

# The project's conventions are workspace lints (Cargo.toml [workspace.lints]: SAFETY
# comments, safety docs, unsafe_op_in_unsafe_fn, missing_docs); here they are errors.
step "clippy (workspace lints as errors)"
if cargo clippy --version >/dev/null 2>&1; then
    cargo clippy --workspace --all-targets -- -D warnings
else
    step "clippy SKIPPED: run 'rustup component add clippy' to enable it"
fi

# The API docs as a reader gets them (`cargo doc`): broken and private links are errors.
step "rustdoc (warnings as errors)"
RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" cargo doc --workspace --no-deps

# Client software built against mpi-lite as a user would (mpi4py from source, a crate on
# rsmpi; Global Arrays on armci-shim and mpi-lite): minutes of downloads and builds,
# #[ignore]d in the default run. Opt-in until every call they bind exists
# (mpi-lite/README.md "Tests"): CLIENT_TESTS=1.
if [ "${CLIENT_TESTS:-0}" = 1 ]; then
    step "client software: mpi4py, rsmpi (mpi-lite/capi/tests/clients.rs)"
    cargo test -p skifmpi --test clients -- --ignored
    step "client software: Global Arrays on armci-shim + mpi-lite (armci-shim/tests/clients.rs)"
    cargo test -p armci-shim --test clients -- --ignored
    step "Global Arrays' six data-heavy programs over fpga-model, release (~11 minutes)"
    cargo test --release -p armci-shim --test clients -- --ignored global_arrays_data_heavy
fi

if [ "${SKIP_MIRI:-0}" != 1 ]; then
    if cargo +nightly miri --version >/dev/null 2>&1; then
        step "Miri: shm lanes + core crate tests"
        # Weak-memory emulation is off: a lane word is a record header (atomic) in one lap
        # and payload (plain copy) in another, and Miri's store-buffer emulation panics on
        # that mix (an internal error, rust-lang/miri#5185). Data races, bounds and UB are
        # still checked; the weak-memory behaviour of the protocol is loom's job (step 3).
        export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation -Zmiri-disable-weak-memory-emulation}"
        cargo +nightly miri test -p skifch-drivers --test ring_props --test corrupt --test conformance_local
        cargo +nightly miri test -p skifch --lib
    else
        step "Miri SKIPPED: run 'rustup component add --toolchain nightly miri rust-src' to enable it"
    fi
fi

if [ "${SKIP_LOOM:-0}" != 1 ]; then
    step "loom: the lane code and its wake-up protocol"
    RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
        cargo test --release -p skifch-drivers --test loom_lane
fi

step "all tests passed"
# Leftovers would mean a job did not clean up after itself.
if ls /dev/shm 2>/dev/null | grep -qiE 'skif'; then
    echo "leftover shared-memory segments in /dev/shm:" >&2
    ls /dev/shm | grep -iE 'skif' >&2
    exit 1
fi
