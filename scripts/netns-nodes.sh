# netns-nodes.sh: two "nodes" as network namespaces joined by a bridge, for the scripts
# that measure across them (ofi-rates.sh, ofi-callgrind.sh); sourced, not run. The layout
# is skifch_testing::NetNodes's: 10.10.0.<i+1> on each node's eth0, the bridge (10.10.0.254)
# in a switch namespace. Root only.
#
#   . scripts/netns-nodes.sh
#   netns_nodes PREFIX NAME      # sets $sw, $nodes (two), $tmp; removes them all at exit
#   netns_up || exit 2           # creates them; says why not on stderr
#   "$tmp/ssh" NODE CMD...       # what mpiexec.hydra's -launcher-exec runs: CMD in NODE
#   "$tmp/ssh-uts" NODE CMD...   # the same in a UTS namespace named NODE (Open MPI's agent)
#   netns_hydra ARGS...          # mpiexec.hydra -n ${np:-2} over $hosts (default one slot
#                                # a node) from the switch namespace, LIMIT s at most (600)
#   netns_ompi IF ARGS...        # Open MPI's mpirun the same way, 2 ranks, ob1 + btl tcp
#                                # on interface/subnet IF

netns_nodes() { # netns_nodes PREFIX NAME
    tmp=$(mktemp -d)
    _netns_who=$2
    sw=$1-sw
    nodes=("$1-n0" "$1-n1")
    trap netns_down EXIT
}

netns_down() {
    for ns in "${nodes[@]}" "$sw"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf "$tmp"
}

netns_up() {
    ip netns add "$sw" || { echo "$_netns_who: cannot create network namespaces (root?)" >&2; return 2; }
    ip -n "$sw" link set lo up
    ip -n "$sw" link add br0 type bridge
    ip -n "$sw" addr add 10.10.0.254/24 dev br0
    ip -n "$sw" link set br0 up
    local i nd
    for i in 0 1; do
        nd=${nodes[$i]}
        ip netns add "$nd"
        ip -n "$nd" link set lo up
        ip link add name eth0 netns "$nd" type veth peer name "v$i" netns "$sw"
        ip -n "$sw" link set "v$i" master br0
        ip -n "$sw" link set "v$i" up
        ip -n "$nd" addr add "10.10.0.$((i + 1))/24" dev eth0
        ip -n "$nd" link set eth0 up
    done
    cat >"$tmp/ssh" <<'EOS'
#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
host=$1; shift
exec ip netns exec "$host" sh -c "$*"
EOS
    # For Open MPI's daemons: each in a UTS namespace named after its node (daemons that
    # shared the machine's host name now and then never reported to mpirun;
    # NetNodes::openmpi_cmd).
    cat >"$tmp/ssh-uts" <<'EOS'
#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
host=$1; shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
EOS
    chmod +x "$tmp/ssh" "$tmp/ssh-uts"
}

netns_hydra() {
    ip netns exec "$sw" timeout "${LIMIT:-600}" mpiexec.hydra -iface br0 -launcher ssh \
        -launcher-exec "$tmp/ssh" -hosts "${hosts:-${nodes[0]}:1,${nodes[1]}:1}" -n "${np:-2}" "$@"
}

netns_ompi() { # netns_ompi BTL_TCP_IF ARGS...
    local btl_if=$1
    shift
    mkdir -p "$tmp/ompi"
    ip netns exec "$sw" timeout "${LIMIT:-600}" mpirun.openmpi --allow-run-as-root \
        --mca orte_tmpdir_base "$tmp/ompi" --host "${hosts:-${nodes[0]}:1,${nodes[1]}:1}" \
        --mca plm_rsh_agent "$tmp/ssh-uts" --mca oob_tcp_if_include 10.10.0.0/24 \
        --mca plm_rsh_no_tree_spawn 1 --mca routed direct --bind-to none --mca pml ob1 \
        --mca btl tcp,self --mca btl_tcp_if_include "$btl_if" -n 2 "$@"
}
