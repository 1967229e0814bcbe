# near-gate.sh (sourced): wait for the vCPUs' near placement before a timed program. On
# this kind of VM the two ranks' vCPUs land near or far, and every shm figure moves 2-4x
# with it (../shared/peers/README.md, "Noise"); a run's programs compare only when they
# start in the same placement.
#   near_probe          the 8-byte channel ping-pong now, in us (the msgrate tool, $rel)
#   near_gate THR_US    waits (at most GATE_MAX_S [60] s) until the probe is below THR_US;
#                       prints the last probe ("?" if none ran)
# Needs: $rel (the release directory with msgrate), $gate_dir (scratch for its CSV/SVG).
near_probe() {
    "$rel/msgrate" --tests latency --sizes 8 --target-s 0.05 --reps 3 --csv "$gate_dir/probe.csv" \
        --svg "$gate_dir/probe.svg" >/dev/null 2>&1 && awk -F, '$2 == "latency" { print $4 }' "$gate_dir/probe.csv"
}
near_gate() {
    local t0=$SECONDS v
    while :; do
        v=$(near_probe)
        awk -v v="$v" -v t="$1" 'BEGIN { exit !(v != "" && v + 0 < t + 0) }' && break
        [ $((SECONDS - t0)) -ge "${GATE_MAX_S:-60}" ] && break
        sleep 2
    done
    echo "${v:-?}"
}
