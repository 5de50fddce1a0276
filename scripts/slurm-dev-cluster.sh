#!/usr/bin/env bash
# A Slurm cluster of several nodes on this one machine (multiple slurmd: one slurmd per node,
# each on its own port), for nodus's Slurm tests and for trying `nodus run --backend slurm`,
# multi-node jobs (`--nodes`) included, without a real cluster.
#
#   scripts/slurm-dev-cluster.sh start    install (if missing), configure, start, wait until ready;
#                                         prints the environment to use on stdout (eval-able)
#   scripts/slurm-dev-cluster.sh stop     cancel all jobs, stop what `start` started
#   scripts/slurm-dev-cluster.sh status   one line per daemon; exit 0 when all are up
#   scripts/slurm-dev-cluster.sh env      print the environment again
#   scripts/slurm-dev-cluster.sh token [USER] [SECONDS]   print a JWT for the TCP endpoint
#
# Debian's slurm-wlm 22.05: munged, a private MariaDB, slurmdbd, slurmctld, slurmd and two
# slurmrestd processes (a unix socket with rest_auth/local, 127.0.0.1:PORT with rest_auth/jwt), all
# plain processes (no systemd); one slurmd per node (dev1, dev2, ...: NodeHostname=localhost,
# each with its own Port, spool, pid and log file). slurmdbd keeps every job's accounting (start, end, each run of a
# requeued job) after slurmctld forgets it (MinJobAge); slurmrestd serves it under /slurmdb/.
# Fake GPUs live on character devices cloned from /dev/null: gpu:h100:4,gpu:l4:2 on dev1 and
# gpu:h100:4 on every other node (so the two L4s stay "every L4 there is").
# Must run as root. State, config, logs and pid files live in $NODUS_SLURM_DEV_DIR
# (default /tmp/nodus-slurm); `stop` only stops processes whose pid files are there.
#
# Environment: NODUS_SLURM_DEV_DIR, NODUS_SLURM_DEV_PORT (slurmctld port, default 6817; node
# dev1's slurmd uses +1, dev2's +4, dev3's +5, ...), NODUS_SLURM_DEV_NODES (how many nodes, 1 to 8,
# default 2), NODUS_SLURM_DEV_REST_PORT (JWT endpoint, default 6820), NODUS_SLURM_DEV_PROCTRACK
# (cgroup, the default when a writable cgroup v1 freezer is mounted, or linuxproc),
# NODUS_SLURM_DEV_ACCOUNTING (slurmdbd, the default, or none: no slurmdbd nor MariaDB, as on a
# cluster without accounting), NODUS_SLURM_DEV_DB_PORT (MariaDB on 127.0.0.1, default 6830; slurmdbd
# listens on the slurmctld port + 2), NODUS_SLURM_DEV_MIN_JOB_AGE (seconds slurmctld keeps a finished
# job, default 600).
set -euo pipefail

DIR=${NODUS_SLURM_DEV_DIR:-/tmp/nodus-slurm}
CTLD_PORT=${NODUS_SLURM_DEV_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
REST_PORT=${NODUS_SLURM_DEV_REST_PORT:-6820}
DBD_PORT=$((CTLD_PORT + 2))
DB_PORT=${NODUS_SLURM_DEV_DB_PORT:-6830}
ACCOUNTING=${NODUS_SLURM_DEV_ACCOUNTING:-slurmdbd}
MIN_JOB_AGE=${NODUS_SLURM_DEV_MIN_JOB_AGE:-600}
NODES=${NODUS_SLURM_DEV_NODES:-2}
[[ $NODES =~ ^[1-8]$ ]] || { echo "slurm-dev-cluster: NODUS_SLURM_DEV_NODES=$NODES: expected 1 to 8" >&2; exit 2; }
DB_SOCK=$DIR/db/mariadb.sock
REST_USER=nodus-restd  # slurmrestd refuses to run as root; jobs sent over the socket run as it
API=v0.0.38
CONF=$DIR/etc/slurm.conf
SOCK=$DIR/rest/slurmrestd.sock
JOBS_DIR=$DIR/jobs
export SLURM_CONF=$CONF

say() { echo "slurm-dev-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

# --- pid files --------------------------------------------------------------------------------

# True when process $1 is alive and its executable's name is $2.
pid_alive() {
  [[ $1 =~ ^[0-9]+$ ]] && [[ $(cat /proc/"$1"/comm 2>/dev/null) == "$2"* ]]
}

# True when the pid in file $1 is alive and its executable's name is $2.
alive() {
  pid_alive "$(cat "$1" 2>/dev/null)" "$2"
}

# Sends TERM to the process in pid file $1 (name $2), waits up to 5 s, then KILL. The process
# itself is watched, not its pid file: daemons remove that file before they are gone.
stop_pid() {
  local file=$1 name=$2 pid i
  pid=$(cat "$file" 2>/dev/null || true)
  if ! pid_alive "$pid" "$name"; then
    rm -f "$file"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 50); do
    pid_alive "$pid" "$name" || break
    sleep 0.1
  done
  if pid_alive "$pid" "$name"; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$file"
  say "stopped $name (pid $pid)"
}

# Node $1's slurmd port: dev1 keeps the port the one node had (slurmctld + 1); the others come
# after slurmdbd's (+2) and the JWT endpoint's default (+3).
node_port() { if (($1 == 1)); then echo "$SLURMD_PORT"; else echo $((CTLD_PORT + 2 + $1)); fi; }

# Waits up to $1 seconds for command "$2..." to succeed.
wait_for() {
  local seconds=$1 i
  shift
  for i in $(seq $((seconds * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

# --- install and configure ----------------------------------------------------------------------

install_packages() {
  local missing=() pkg
  local pkgs=(slurm-wlm slurmrestd munge slurm-wlm-jwt-plugin curl)
  [[ $ACCOUNTING == slurmdbd ]] && pkgs+=(slurmdbd mariadb-server)
  for pkg in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 ||
    say "apt-get update failed; trying the install with the lists at hand"
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >&2
}

ensure_user() {
  id -u "$REST_USER" >/dev/null 2>&1 && return 0
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$REST_USER"
}

make_fake_gpus() {
  local i dev
  mkdir -p "$DIR/fakegpu"
  for ((i = 0; i < 6 + 4 * (NODES - 1); i++)); do
    dev=$DIR/fakegpu/nvidia$i
    [[ -c $dev || -L $dev ]] && continue
    rm -f "$dev"
    mknod -m 0666 "$dev" c 1 3 2>/dev/null || ln -s /dev/null "$dev"
  done
}

# slurm.conf for nodes dev1..devN, all on this machine (NodeHostname=localhost, a Port each:
# slurm-wlm is built with MULTIPLE_SLURMD, so `slurmd -N devK` serves node devK). CPUs are overstated (config_overrides) so that a
# 2-core CI machine runs several test jobs at once; sockets and threads follow `slurmd -C`.
write_config() {
  local topo sockets threads mem cpus=8 cores proctrack=proctrack/linuxproc task=task/none
  local accounting=AccountingStorageType=accounting_storage/none
  if [[ $ACCOUNTING == slurmdbd ]]; then
    accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT"
  fi
  # proctrack/cgroup puts each job in its own cgroup and kills everything in it when the job
  # ends (double-forked and setsid daemons too, which linuxproc loses once they are reparented).
  # Slurm 22.05 does that through cgroup v1 (freezer); its cgroup/v2 plugin wants the unified
  # hierarchy itself at /sys/fs/cgroup (and systemd for its scope), which a hybrid host such as
  # this container's does not offer. Without a writable v1 freezer: linuxproc, and the nodus
  # job script's enforcer (a process group) is the net.
  if [[ ${NODUS_SLURM_DEV_PROCTRACK:-cgroup} == cgroup ]] &&
    grep -q '^cgroup /sys/fs/cgroup/freezer cgroup rw' /proc/mounts; then
    proctrack=proctrack/cgroup task=task/cgroup
  fi
  topo=$(slurmd -C | head -1)
  sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$topo")
  threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$topo")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$topo")
  cores=$(((cpus + sockets * threads - 1) / (sockets * threads)))
  cpus=$((sockets * cores * threads))
  mkdir -p "$DIR/etc"
  cat >"$CONF.new" <<EOF
# Written by scripts/slurm-dev-cluster.sh; regenerated on start.
ClusterName=nodus-dev
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/spool/jwt_hs256.key
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d-%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
ProctrackType=$proctrack
TaskPlugin=$task
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
MinJobAge=$MIN_JOB_AGE
KillWait=5
$accounting
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
SlurmdParameters=config_overrides
EOF
  local i hw="CPUs=$cpus Boards=1 SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem"
  echo "AutoDetect=off" >"$DIR/etc/gres.conf.new"
  for ((i = 1; i <= NODES; i++)); do
    if ((i == 1)); then
      echo "NodeName=dev1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$(node_port 1) $hw Gres=gpu:h100:4,gpu:l4:2 State=UNKNOWN"
      echo "NodeName=dev1 Name=gpu Type=h100 File=$DIR/fakegpu/nvidia[0-3]" >>"$DIR/etc/gres.conf.new"
      echo "NodeName=dev1 Name=gpu Type=l4 File=$DIR/fakegpu/nvidia[4-5]" >>"$DIR/etc/gres.conf.new"
    else
      echo "NodeName=dev$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$(node_port "$i") $hw Gres=gpu:h100:4 State=UNKNOWN"
      echo "NodeName=dev$i Name=gpu Type=h100 File=$DIR/fakegpu/nvidia[$((4 * i - 2))-$((4 * i + 1))]" >>"$DIR/etc/gres.conf.new"
    fi
  done >>"$CONF.new"
  echo "PartitionName=debug Nodes=dev[1-$NODES] Default=YES MaxTime=INFINITE State=UP" >>"$CONF.new"
  # Containment only: no core, memory or device limits (the fake GPUs are /dev/null clones).
  cat >"$DIR/etc/cgroup.conf.new" <<EOF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
  local changed=0 f
  for f in "$CONF" "$DIR/etc/gres.conf" "$DIR/etc/cgroup.conf"; do
    if cmp -s "$f.new" "$f"; then rm "$f.new"; else mv "$f.new" "$f"; changed=1; fi
  done
  chmod 0644 "$CONF" "$DIR/etc/gres.conf" "$DIR/etc/cgroup.conf"
  return $((1 - changed))  # 0 = changed
}

prepare_dirs() {
  mkdir -p "$DIR"/{etc,spool/ctld,spool/d,run,log,rest,db}
  chmod 0700 "$DIR/db"
  if [[ ! -s $DIR/spool/db.pass ]]; then
    (umask 077 && head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$DIR/spool/db.pass")
  fi
  chmod 0755 "$DIR" "$DIR/etc"
  chown "$REST_USER" "$DIR/rest"
  mkdir -p "$JOBS_DIR" && chmod 1777 "$JOBS_DIR"
  if [[ ! -s $DIR/spool/jwt_hs256.key ]]; then
    (umask 077 && head -c 32 /dev/urandom >"$DIR/spool/jwt_hs256.key")
  fi
  chmod 0600 "$DIR/spool/jwt_hs256.key"
}

# --- daemons ------------------------------------------------------------------------------------

munge_works() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  munge_works && return 0
  mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --force </dev/null >/dev/null 2>&1 9>&-
  wait_for 10 munge_works || die "munged did not start (see /var/log/munge/munged.log)"
  cp /run/munge/munged.pid "$DIR/run/munged.pid"  # marks it as ours, for stop
  say "started munged (pid $(<"$DIR/run/munged.pid"))"
}

# --- accounting: MariaDB and slurmdbd ----------------------------------------------------------

db_up() { mariadb --no-defaults -S "$DB_SOCK" -u root -e 'select 1' >/dev/null 2>&1; }

# A MariaDB of its own (data in $DIR/db, a unix socket there, TCP on 127.0.0.1 only) so that the
# machine's own MariaDB, if any, is left alone. Sized for a test cluster: small buffers.
start_mariadb() {
  if ! alive "$DIR/run/mariadbd.pid" mariadbd; then
    if [[ ! -d $DIR/db/data/mysql ]]; then
      mariadb-install-db --no-defaults --datadir="$DIR/db/data" --user=root \
        --auth-root-authentication-method=socket --skip-test-db >>"$DIR/log/mariadb.log" 2>&1 ||
        die "mariadb-install-db failed (see $DIR/log/mariadb.log)"
    fi
    setsid mariadbd --no-defaults --user=root --datadir="$DIR/db/data" --socket="$DB_SOCK" \
      --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
      --pid-file="$DIR/run/mariadbd.pid" --log-error="$DIR/log/mariadb.log" \
      --innodb-buffer-pool-size=32M --performance-schema=OFF --skip-log-bin \
      </dev/null >/dev/null 2>&1 9>&- &
    if ! wait_for 30 db_up; then
      tail -n 20 "$DIR/log/mariadb.log" >&2 || true
      die "MariaDB did not start"
    fi
    say "started mariadbd (pid $(<"$DIR/run/mariadbd.pid"))"
  fi
  local pass
  pass=$(<"$DIR/spool/db.pass")
  mariadb --no-defaults -S "$DB_SOCK" -u root -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
    die "cannot create the slurm database user"
}

# Returns 0 when the file changed.
write_dbd_config() {
  local new=$DIR/etc/slurmdbd.conf.new
  (
    umask 077
    cat >"$new" <<EOF
# Written by scripts/slurm-dev-cluster.sh; regenerated on start. Holds the database password: 0600.
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
AuthType=auth/munge
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(<"$DIR/spool/db.pass")
StorageLoc=slurm_acct_db
EOF
  )
  if cmp -s "$new" "$DIR/etc/slurmdbd.conf"; then
    rm "$new"
    return 1
  fi
  mv "$new" "$DIR/etc/slurmdbd.conf"
}

dbd_up() { sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1; }

start_slurmdbd() {
  if write_dbd_config && alive "$DIR/run/slurmdbd.pid" slurmdbd; then
    stop_pid "$DIR/run/slurmdbd.pid" slurmdbd
  fi
  if ! alive "$DIR/run/slurmdbd.pid" slurmdbd; then
    # slurmdbd reads the slurmdbd.conf beside $SLURM_CONF.
    slurmdbd </dev/null >>"$DIR/log/slurmdbd.out" 2>&1 9>&-
    if ! wait_for 60 dbd_up; then
      tail -n 20 "$DIR/log/slurmdbd.log" >&2 || true
      die "slurmdbd does not answer sacctmgr"
    fi
    say "started slurmdbd (pid $(<"$DIR/run/slurmdbd.pid"))"
  fi
  # The cluster, one account and the users jobs run as (root, the socket's user): slurmctld
  # registers only a cluster the database knows.
  if ! sacctmgr -n -P show cluster format=cluster | grep -qx nodus-dev; then
    sacctmgr -i -Q add cluster nodus-dev >/dev/null || die "sacctmgr add cluster failed"
    sacctmgr -i -Q add account nodus cluster=nodus-dev >/dev/null || die "sacctmgr add account failed"
    sacctmgr -i -Q add user root,"$REST_USER" account=nodus cluster=nodus-dev >/dev/null ||
      die "sacctmgr add user failed"
  fi
}

ctld_up() { scontrol ping 2>/dev/null | grep -q "is UP"; }

start_slurmctld() {
  alive "$DIR/run/slurmctld.pid" slurmctld && ctld_up && return 0
  slurmctld -f "$CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 9>&-
  # slurmctld daemonizes and exits 0 even when it dies right after, so only ping counts.
  if ! wait_for 20 ctld_up; then
    tail -n 20 "$DIR/log/slurmctld.log" >&2 || true
    die "slurmctld did not answer scontrol ping"
  fi
  say "started slurmctld (pid $(<"$DIR/run/slurmctld.pid"))"
}

node_state() { sinfo -h -n "$1" -o %t 2>/dev/null | head -1; }
node_idle() { [[ $(node_state "$1") =~ ^(idle|mix|alloc)$ ]]; }

# One slurmd per node, each told its node's name (-N): its port, spool, pid and log file follow
# from slurm.conf (%n).
start_slurmd() {
  local node=$1 pid=$DIR/run/slurmd-$1.pid
  if ! alive "$pid" slurmd; then
    slurmd -f "$CONF" -N "$node" </dev/null >>"$DIR/log/slurmd-$node.out" 2>&1 9>&-
    wait_for 10 alive "$pid" slurmd || die "slurmd of $node did not start (see $DIR/log/slurmd-$node.log)"
    say "started slurmd of $node (pid $(<"$pid"))"
  fi
}

wait_node_idle() {
  local node=$1
  wait_for 5 node_idle "$node" && return 0
  # A node that once registered badly stays drained until resumed.
  scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
  if ! wait_for 20 node_idle "$node"; then
    tail -n 20 "$DIR/log/slurmd-$node.log" >&2 || true
    die "node $node is '$(node_state "$node")', not idle"
  fi
}

# The slurmd pid files there are, of this and of earlier node counts (and the one slurmd of the
# cluster before it had several nodes, run/slurmd.pid).
slurmd_pid_files() { compgen -G "$DIR/run/slurmd*.pid" || true; }

rest_ping_socket() {
  curl -sf --max-time 2 --unix-socket "$SOCK" "http://localhost/slurm/$API/ping" | grep -q '"UP"'
}

rest_ping_tcp() {
  local token
  token=$(mint_token "$REST_USER" 120) || return 1
  curl -sf --max-time 2 -H "X-SLURM-USER-NAME: $REST_USER" -H "X-SLURM-USER-TOKEN: $token" \
    "http://127.0.0.1:$REST_PORT/slurm/$API/ping" | grep -q '"UP"'
}

mint_token() {
  local out
  out=$(scontrol token username="$1" lifespan="$2") || return 1
  echo "${out#SLURM_JWT=}"
}

# slurmrestd stays in the foreground; started with -u it setuid()s itself, so $! is its pid.
start_restd() {
  local name=$1 auth=$2 listen=$3 ping=$4
  if ! alive "$DIR/run/$name.pid" slurmrestd; then
    [[ $name == restd-socket ]] && rm -f "$SOCK"
    # SLURM_JWT=daemon makes slurmrestd forward each client's token to slurmctld; the socket
    # one must not have it, or it speaks JWT for local clients too and slurmctld rejects it.
    local jwt=()
    [[ $auth == rest_auth/jwt ]] && jwt=(SLURM_JWT=daemon)
    local plugins=openapi/$API
    [[ $ACCOUNTING == slurmdbd ]] && plugins+=,openapi/db$API
    env "${jwt[@]}" setsid slurmrestd -u "$REST_USER" -s "$plugins" -a "$auth" "$listen" \
      </dev/null >>"$DIR/log/$name.log" 2>&1 9>&- &
    echo $! >"$DIR/run/$name.pid"
    say "started slurmrestd $auth on $listen (pid $!)"
  fi
  if ! wait_for 15 "$ping"; then
    tail -n 20 "$DIR/log/$name.log" >&2 || true
    die "slurmrestd ($auth) does not answer /ping"
  fi
}

print_env() {
  cat <<EOF
export SLURM_CONF=$CONF
export NODUS_SLURM_URL=unix://$SOCK
export NODUS_SLURM_USER=$REST_USER
export NODUS_SLURM_WORKDIR=$JOBS_DIR
# JWT over TCP instead of the socket:
#   export NODUS_SLURM_URL=http://127.0.0.1:$REST_PORT
#   export SLURM_JWT=\$($0 token $REST_USER 3600)
EOF
}

# --- commands -----------------------------------------------------------------------------------

cmd_start() {
  [[ $(id -u) == 0 ]] || die "run as root (it installs packages and starts daemons)"
  install_packages
  ensure_user
  prepare_dirs
  make_fake_gpus
  if write_config; then
    # A changed config needs slurmctld and slurmd restarted together.
    say "configuration changed: (re)starting slurmctld and every slurmd"
    local f
    for f in $(slurmd_pid_files); do stop_pid "$f" slurmd; done
    stop_pid "$DIR/run/slurmctld.pid" slurmctld
  fi
  start_munge
  if [[ $ACCOUNTING == slurmdbd ]]; then
    start_mariadb
    start_slurmdbd
  fi
  start_slurmctld
  local i
  for ((i = 1; i <= NODES; i++)); do start_slurmd "dev$i"; done
  for ((i = 1; i <= NODES; i++)); do wait_node_idle "dev$i"; done
  start_restd restd-socket rest_auth/local "unix:$SOCK" rest_ping_socket
  start_restd restd-jwt rest_auth/jwt "127.0.0.1:$REST_PORT" rest_ping_tcp
  say "ready"
  print_env
}

cmd_stop() {
  if alive "$DIR/run/slurmctld.pid" slurmctld && ctld_up; then
    local ids
    ids=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
    if [[ -n ${ids// /} ]]; then
      say "cancelling jobs $ids"
      # shellcheck disable=SC2086
      scancel $ids 2>/dev/null || true
      # shellcheck disable=SC2016  # expanded by the inner bash, on each try
      wait_for 15 bash -c '[[ -z $(squeue -h -t R,CG,S -o %A 2>/dev/null) ]]' ||
        say "some jobs are still ending"
    fi
  fi
  stop_pid "$DIR/run/restd-jwt.pid" slurmrestd
  stop_pid "$DIR/run/restd-socket.pid" slurmrestd
  local f
  for f in $(slurmd_pid_files); do stop_pid "$f" slurmd; done
  stop_pid "$DIR/run/slurmctld.pid" slurmctld
  stop_pid "$DIR/run/slurmdbd.pid" slurmdbd
  stop_pid "$DIR/run/mariadbd.pid" mariadbd
  stop_pid "$DIR/run/munged.pid" munged
  rm -f "$SOCK"
}

cmd_status() {
  local ok=0 f name i
  local daemons=(slurmctld:slurmctld)
  for ((i = 1; i <= NODES; i++)); do daemons+=("slurmd-dev$i:slurmd"); done
  for f in "${daemons[@]}" restd-socket:slurmrestd restd-jwt:slurmrestd; do
    name=${f#*:}
    if alive "$DIR/run/${f%%:*}.pid" "$name"; then
      echo "${f%%:*}: running (pid $(<"$DIR/run/${f%%:*}.pid"))"
    else
      echo "${f%%:*}: stopped"
      ok=3
    fi
  done
  if munge_works; then echo "munge: working"; else echo "munge: not working"; ok=3; fi
  if ((ok == 0)); then
    if ctld_up; then echo "scontrol ping: UP"; else echo "scontrol ping: DOWN"; ok=3; fi
    for ((i = 1; i <= NODES; i++)); do echo "node dev$i: $(node_state "dev$i")"; done
    if rest_ping_socket; then echo "rest socket: UP"; else echo "rest socket: DOWN"; ok=3; fi
    if rest_ping_tcp; then echo "rest jwt: UP"; else echo "rest jwt: DOWN"; ok=3; fi
  fi
  return $ok
}

# start and stop hold a lock, so that test processes started in parallel do not race (daemons
# are started with fd 9 closed, or they would hold it forever).
locked() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock 9
  "$@"
}

case ${1:-} in
  start) locked cmd_start ;;
  stop) locked cmd_stop ;;
  status) cmd_status ;;
  env) print_env ;;
  token) mint_token "${2:-$REST_USER}" "${3:-3600}" ;;
  *)
    echo "usage: $0 start|stop|status|env|token [USER] [SECONDS]" >&2
    exit 2
    ;;
esac
