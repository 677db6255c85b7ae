#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for the integration tests (pytest -m slurm) and for
# trying the sbatch files without a real cluster. Needs root (Debian's slurm-wlm and munge are
# installed with apt-get when missing); no systemd, no cgroups.
#
#   scripts/slurm_cluster.sh start    # prints the SLURM_CONF clients need
#   scripts/slurm_cluster.sh stop     # stops the daemons it started, by their PIDs
#
# Everything (config, keys, state, logs, PID files) lives under $LEGALFT_SLURM_DIR
# (default /tmp/legalft-slurm).
set -euo pipefail

dir=${LEGALFT_SLURM_DIR:-/tmp/legalft-slurm}
conf=$dir/slurm.conf

install_packages() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return
    if [ "$(id -u)" != 0 ]; then
        echo "error: slurm-wlm and munge are not installed, and installing them needs root (apt-get install slurm-wlm munge)" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
}

write_config() {
    mkdir -p "$dir"/{state,spool,log,run}
    chmod 700 "$dir"
    local cpus memory
    cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # every core: GNU nproc counts OMP_NUM_THREADS
    memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
    [ -f "$dir/munge.key" ] || { head -c 1024 /dev/urandom > "$dir/munge.key"; chmod 400 "$dir/munge.key"; }
    cat > "$conf" <<EOF
ClusterName=legalft
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerParameters=batch_sched_delay=0
MinJobAge=600
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${LEGALFT_SLURMCTLD_PORT:-6817}
SlurmdPort=${LEGALFT_SLURMD_PORT:-6818}
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
    install_packages
    write_config
    export SLURM_CONF=$conf
    running "$dir/run/munged.pid" || munged --force --key-file="$dir/munge.key" --socket="$dir/run/munge.socket" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/state/munge.seed"
    running "$dir/run/slurmctld.pid" || slurmctld -f "$conf"
    running "$dir/run/slurmd.pid" || slurmd -f "$conf" -N localhost
    for _ in $(seq 100); do
        if sinfo -h -N -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
            echo "export SLURM_CONF=$conf"
            return
        fi
        sleep 0.2
    done
    echo "error: the node did not come up; see $dir/log/" >&2
    exit 1
}

drain() {
    # Jobs still running or completing are cancelled and given time to end, so that no job step
    # daemon (slurmstepd, started by slurmd) outlives the cluster.
    running "$dir/run/slurmctld.pid" || return 0
    export SLURM_CONF=$conf
    scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 150); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 0.2
    done
}

stop() {
    local pidfile pid
    drain
    for daemon in slurmd slurmctld munged; do
        pidfile=$dir/run/$daemon.pid
        running "$pidfile" || continue
        pid=$(cat "$pidfile")
        kill "$pid"
        for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        rm -f "$pidfile"
    done
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
