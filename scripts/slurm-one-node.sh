#!/bin/bash
# slurm-one-node.sh: a one-node Slurm on this machine for the PMI tests (issue 21;
# skifch-drivers/tests/boot.rs srun_serves_pmi1_and_pmix runs only where `sinfo` answers).
# Not a production setup: root runs everything, no cgroups, no accounting.
#
#   sudo apt-get install slurmd slurmctld slurm-client munge    # Debian 12: Slurm 22.05
#   sudo scripts/slurm-one-node.sh start     # writes /etc/slurm/slurm.conf, starts munged,
#                                            # slurmctld, slurmd; waits for an idle node
#   srun --mpi=pmi2 -n 4 ./prog              # or --mpi=pmix
#   sudo scripts/slurm-one-node.sh stop      # ends the three daemons (by their pid files)
set -u
run=/run/skifch-slurm
case "${1:-}" in
start)
    for t in munged slurmctld slurmd sinfo; do
        command -v $t >/dev/null || [ -x /usr/sbin/$t ] ||
            { echo "slurm-one-node: $t missing (apt-get install slurmd slurmctld slurm-client munge)" >&2; exit 2; }
    done
    host=$(hostname -s)
    cpus=$(nproc)
    mkdir -p "$run" /var/lib/slurm/slurmd /var/lib/slurm/slurmctld /var/log/slurm
    [ -e /etc/slurm/slurm.conf ] && [ ! -e /etc/slurm/slurm.conf.orig ] &&
        cp /etc/slurm/slurm.conf /etc/slurm/slurm.conf.orig
    cat >/etc/slurm/slurm.conf <<CONF
# Written by skifch's scripts/slurm-one-node.sh: one node, for tests.
ClusterName=local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
    [ -e /etc/munge/munge.key ] || /usr/sbin/mungekey --create 2>/dev/null
    mkdir -p /run/munge
    pgrep -x munged >/dev/null || /usr/sbin/munged --force --pid-file="$run/munged.pid" ||
        { echo "slurm-one-node: munged did not start" >&2; exit 1; }
    /usr/sbin/slurmctld -c || { echo "slurm-one-node: slurmctld did not start (/var/log/slurm)" >&2; exit 1; }
    /usr/sbin/slurmd || { echo "slurm-one-node: slurmd did not start (/var/log/slurm)" >&2; exit 1; }
    for _ in $(seq 1 30); do
        sinfo -h -o %t 2>/dev/null | grep -q idle && { sinfo; exit 0; }
        sleep 1
    done
    echo "slurm-one-node: no idle node after 30 s (/var/log/slurm)" >&2
    exit 1
    ;;
stop)
    for d in slurmd slurmctld munged; do
        [ -s "$run/$d.pid" ] && kill "$(cat "$run/$d.pid")" 2>/dev/null
    done
    exit 0
    ;;
*)
    echo "usage: slurm-one-node.sh start|stop" >&2
    exit 2
    ;;
esac
