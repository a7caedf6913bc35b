# Shared helpers for scripts/slurm-up.sh, slurm-down.sh and slurm-ctl.sh (sourced, not run).
# Everything lives under $STATE; nothing is written to /etc.

MIRAGE_TEST_DIR="${MIRAGE_TEST_DIR:-/tmp/mirage-test}"
STATE="${MIRAGE_SLURM_STATE:-$MIRAGE_TEST_DIR/slurm}"
TEMPLATES="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# A newer release's cluster (scripts/slurm-newer/up.sh) keeps what differs in
# $STATE/cluster.env: its ports, SLURM_BIN (wrappers of its commands, put
# first on PATH), TEMPLATE_OVERLAY (templates that replace ours) and
# MARIADB_OS_USER. Without the file everything is as for Debian 12's 22.05.
SLURM_BIN="" TEMPLATE_OVERLAY="" MARIADB_OS_USER=""
if [ -f "$STATE/cluster.env" ]; then
  . "$STATE/cluster.env"
fi
if [ -n "$SLURM_BIN" ]; then
  case ":$PATH:" in *":$SLURM_BIN:"*) ;; *) PATH="$SLURM_BIN:$PATH" ;; esac
  export PATH
fi
CONF_DIR="$STATE/etc"
SLURM_CONF="$CONF_DIR/slurm.conf"
MUNGE_SOCK="$STATE/munge/munge.sock"
MARIADB_SOCK="$STATE/mysql/run/mysqld.sock"
MARIADB_PORT="${MIRAGE_SLURM_MARIADB_PORT:-13306}"
SLURMDBD_PORT="${MIRAGE_SLURM_DBD_PORT:-16819}"
SLURMCTLD_PORT="${MIRAGE_SLURM_CTLD_PORT:-16817}"
SLURMD_BASE_PORT="${MIRAGE_SLURM_SLURMD_BASE_PORT:-16820}"
SLURM_USER="$(id -un)"
# The second Unix user of the two-user tests: another user on the same login
# node, who can copy this user's chain tags into the comments of their jobs.
SECOND_USER="${MIRAGE_TEST_SECOND_USER:-mirageb}"
# The cluster's size: MIRAGE_SLURM_NODES slurmd (node1..nodeN, 4 fake GPUs
# each) on ports SLURMD_BASE_PORT+1..+N; 4 unless set. Every test is written
# for 4; the real-scheduler benchmark (make bench-real-slurm) runs 24.
NODE_COUNT="${MIRAGE_SLURM_NODES:-4}"
case "$NODE_COUNT" in
  ''|*[!0-9]*) echo "slurm: ERROR: MIRAGE_SLURM_NODES=$NODE_COUNT: want a whole number of nodes, 1 to 64" >&2; exit 2 ;;
esac
if [ "$NODE_COUNT" -lt 1 ] || [ "$NODE_COUNT" -gt 64 ]; then
  echo "slurm: ERROR: MIRAGE_SLURM_NODES=$NODE_COUNT: want 1 to 64 nodes" >&2; exit 2
fi
NODES="$(seq -f 'node%g' 1 "$NODE_COUNT" | tr '\n' ' ')"
NODES="${NODES% }"
# MIRAGE_SLURM_SCHED_CONF names a file of scheduling lines that replace the
# default block of slurm.conf.in (SchedulerType, SchedulerParameters,
# PriorityType, PriorityWeight*, PriorityMaxAge, ...): the real-scheduler
# benchmark writes one from a simulator preset. Only those keys are allowed.
SCHED_CONF_FILE="${MIRAGE_SLURM_SCHED_CONF:-}"
export SLURM_CONF MUNGE_SOCK STATE

log() { echo "slurm: $*" >&2; }

# tails prints the end of every log file under the state dir.
tails() {
  local f
  for f in "$STATE"/log/*.log "$STATE"/mysql/*.err; do
    [ -f "$f" ] || continue
    echo "---- tail $f" >&2
    tail -n 25 "$f" >&2
  done
}

die() { log "ERROR: $*"; tails; exit 1; }

# wait_for TIMEOUT_S DESCRIPTION CMD...: polls CMD every 0.2 s until it succeeds.
wait_for() {
  local timeout="$1" what="$2"; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  while ! "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      die "$what not ready after ${timeout}s"
    fi
    sleep 0.2
  done
}

# pid_of PIDFILE prints the daemon's pid if it runs: the pid must be alive AND
# be the daemon the file names (after a reboot a stale pid may belong to
# another process, which must never be signalled).
pid_of() {
  local pf="$1" pid want comm
  [ -f "$pf" ] || return 1
  pid="$(cat "$pf" 2>/dev/null || true)"
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  case "$(basename "$pf")" in
    munged.pid) want=munged ;;
    mysqld.pid) want=mariadbd ;;
    slurmdbd.pid) want=slurmdbd ;;
    slurmctld.pid) want=slurmctld ;;
    slurmd-*.pid) want=slurmd ;;
    *) return 1 ;;
  esac
  comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
  [ "$comm" = "$want" ] || return 1
  echo "$pid"
}

pid_alive() { pid_of "$1" >/dev/null; }

# stop_pid PIDFILE NAME: SIGTERM, wait up to 15 s, then SIGKILL; only the
# daemon the pid file names is signalled.
stop_pid() {
  local pf="$1" name="$2" pid i
  [ -f "$pf" ] || return 0
  if pid="$(pid_of "$pf")"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 75); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) ignored SIGTERM; killing"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pf"
}

# node_lines prints one NodeName line per node, each slurmd on its own port.
node_lines() {
  local i
  for i in $(seq 1 "$NODE_COUNT"); do
    echo "NodeName=node$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((SLURMD_BASE_PORT+i)) CPUs=8 RealMemory=16000 Gres=gpu:tesla:4 State=UNKNOWN"
  done
}

# The scheduling block of slurm.conf when MIRAGE_SLURM_SCHED_CONF is unset:
# what every test is written for.
DEFAULT_SCHED_CONF='SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,sched_min_interval=0
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightQOS=1000'

# sched_conf prints the scheduling block: the default, or the lines of
# MIRAGE_SLURM_SCHED_CONF after checking that each sets a scheduling key
# (comments and blank lines dropped).
sched_conf() {
  if [ -z "$SCHED_CONF_FILE" ]; then
    printf '%s\n' "$DEFAULT_SCHED_CONF"
    return 0
  fi
  [ -r "$SCHED_CONF_FILE" ] || die "MIRAGE_SLURM_SCHED_CONF=$SCHED_CONF_FILE: no such readable file"
  local line n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n+1))
    case "$line" in ''|'#'*) continue ;; esac
    case "${line%%=*}" in
      SchedulerType|SchedulerParameters|PriorityType|PriorityFlags|PriorityWeight[A-Z]*|PriorityMaxAge|PriorityDecayHalfLife|PriorityCalcPeriod|PriorityFavorSmall|PriorityUsageResetPeriod) ;;
      *) die "MIRAGE_SLURM_SCHED_CONF=$SCHED_CONF_FILE: line $n sets ${line%%=*}: only Scheduler* and Priority* lines may replace the scheduling block" ;;
    esac
    printf '%s\n' "$line"
  done < "$SCHED_CONF_FILE"
}

render() { # template output
  # Only our variables are substituted; the result replaces output only when
  # it differs, and CONFIG_CHANGED records that a running daemon has stale config.
  local tmp="$2.new.$$" tpl="$TEMPLATES/$1"
  if [ -n "$TEMPLATE_OVERLAY" ] && [ -f "$TEMPLATE_OVERLAY/$1" ]; then tpl="$TEMPLATE_OVERLAY/$1"; fi
  DB_PASS="$DB_PASS" SLURM_USER="$SLURM_USER" STATE="$STATE" \
  MARIADB_PORT="$MARIADB_PORT" SLURMDBD_PORT="$SLURMDBD_PORT" SLURMCTLD_PORT="$SLURMCTLD_PORT" \
  NODE_RANGE="node[1-$NODE_COUNT]" NODE_LINES="$(node_lines)" SCHED_CONF="$(sched_conf)" \
  envsubst '${DB_PASS} ${SLURM_USER} ${STATE} ${MARIADB_PORT} ${SLURMDBD_PORT} ${SLURMCTLD_PORT} ${NODE_RANGE} ${NODE_LINES} ${SCHED_CONF}' \
    < "$tpl" > "$tmp" || { rm -f "$tmp"; die "rendering $1 failed"; }
  if [ -f "$2" ] && cmp -s "$tmp" "$2"; then
    rm -f "$tmp"
    return 0
  fi
  [ -f "$2" ] && CONFIG_CHANGED=1
  mv -f "$tmp" "$2"
}

CONFIG_CHANGED=0
write_config() {
  mkdir -p "$CONF_DIR" "$STATE"/{log,run,ctld,spool,dev,munge,mysql/run}
  [ -f "$STATE/db.pass" ] || (umask 077; od -An -N12 -tx1 /dev/urandom | tr -d ' \n' > "$STATE/db.pass")
  DB_PASS="$(cat "$STATE/db.pass")"
  sched_conf >/dev/null # fails here, in this shell, on a bad MIRAGE_SLURM_SCHED_CONF
  render slurm.conf.in "$SLURM_CONF"
  render gres.conf.in "$CONF_DIR/gres.conf"
  render cgroup.conf.in "$CONF_DIR/cgroup.conf"
  local old_umask; old_umask="$(umask)"
  umask 077; render slurmdbd.conf.in "$CONF_DIR/slurmdbd.conf"; umask "$old_umask"
  chmod 600 "$CONF_DIR/slurmdbd.conf"
  chmod 644 "$SLURM_CONF" "$CONF_DIR/gres.conf" "$CONF_DIR/cgroup.conf"
  local i
  for i in 0 1 2 3; do ln -sfn /dev/null "$STATE/dev/gpu$i"; done
  for n in $NODES; do mkdir -p "$STATE/spool/$n"; done
}

munge_ok() { munge -S "$MUNGE_SOCK" -n </dev/null | unmunge -S "$MUNGE_SOCK" >/dev/null; }
start_munge() {
  if pid_alive "$STATE/run/munged.pid" && munge_ok >/dev/null 2>&1; then return 0; fi
  stop_pid "$STATE/run/munged.pid" munged
  [ -f "$STATE/munge/munge.key" ] || mungekey -c -k "$STATE/munge/munge.key" >/dev/null
  chmod 755 "$STATE/munge"; chmod 600 "$STATE/munge/munge.key"
  rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
  munged -f --key-file="$STATE/munge/munge.key" --socket="$MUNGE_SOCK" \
    --pid-file="$STATE/run/munged.pid" --log-file="$STATE/log/munged.log" \
    --seed-file="$STATE/munge/munged.seed" || die "munged failed to start"
  wait_for 10 munged munge_ok
}

mysql_root() { mariadb --no-defaults -S "$MARIADB_SOCK" -u root "$@"; }
mariadb_ok() { mariadb-admin --no-defaults -S "$MARIADB_SOCK" -u root ping; }
start_mariadb() {
  local d="$STATE/mysql"
  if pid_alive "$d/run/mysqld.pid" && mariadb_ok >/dev/null 2>&1; then return 0; fi
  stop_pid "$d/run/mysqld.pid" mariadbd
  local dbuser="$MARIADB_OS_USER"
  if [ -z "$dbuser" ]; then
    dbuser=mysql
    id mysql >/dev/null 2>&1 || dbuser="$(id -un)"
  fi
  if [ ! -d "$d/data/mysql" ]; then
    rm -rf "$d/data"; mkdir -p "$d/data"
    chown -R "$dbuser" "$d"
    mariadb-install-db --no-defaults --datadir="$d/data" --user="$dbuser" \
      --auth-root-authentication-method=socket --skip-test-db >"$STATE/log/mariadb-install.log" 2>&1 \
      || die "mariadb-install-db failed (see $STATE/log/mariadb-install.log)"
  fi
  chown -R "$dbuser" "$d"
  rm -f "$MARIADB_SOCK"
  nohup mariadbd --no-defaults --datadir="$d/data" --user="$dbuser" \
    --socket="$MARIADB_SOCK" --port="$MARIADB_PORT" --bind-address=127.0.0.1 \
    --pid-file="$d/run/mysqld.pid" --log-error="$d/mariadbd.err" \
    --innodb-buffer-pool-size=64M --innodb-flush-log-at-trx-commit=0 --skip-name-resolve \
    >/dev/null 2>&1 &
  wait_for 30 mariadb mariadb_ok
  mysql_root -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
    ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    FLUSH PRIVILEGES;" || die "creating the slurm database user failed"
}

slurmdbd_ok() { sacctmgr -n list cluster; }
start_slurmdbd() {
  if pid_alive "$STATE/run/slurmdbd.pid" && slurmdbd_ok >/dev/null 2>&1; then return 0; fi
  stop_pid "$STATE/run/slurmdbd.pid" slurmdbd
  slurmdbd || die "slurmdbd failed to start"
  wait_for 30 slurmdbd slurmdbd_ok
}

# in_ci reports whether CI is set as internal/testenv reads it (anything but
# "", "0" or "false"): the tests then require what this script provides.
in_ci() { case "${CI:-}" in ""|0|false) return 1 ;; *) return 0 ;; esac; }

# ensure_second_user adds $SECOND_USER (a system user without a home or a
# login shell) unless it exists. As root a failure to add it fails the
# bring-up; without root it cannot be added, which fails the bring-up in CI
# (the two-user tests require it there) and is logged elsewhere (they skip).
ensure_second_user() {
  id "$SECOND_USER" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -ne 0 ]; then
    in_ci && die "the second test user $SECOND_USER does not exist and only root can add it: run as root (CI requires the two-user tests)"
    log "the second test user $SECOND_USER does not exist and only root can add it: the two-user tests will skip"
    return 0
  fi
  local i err=""
  for i in 1 2 3 4 5; do # another bring-up may hold the passwd lock for a moment
    err="$(useradd --system --no-create-home --shell /usr/sbin/nologin "$SECOND_USER" 2>&1)" && return 0
    id "$SECOND_USER" >/dev/null 2>&1 && return 0
    sleep 1
  done
  die "could not add the second test user $SECOND_USER: $err"
}

# setup_accounting registers the cluster, accounts, QOS, the user and the
# second test user (idempotent).
setup_accounting() {
  local u; u="$(id -un)"
  sacctmgr -n list cluster format=cluster -P | grep -qx mirage || sacctmgr -i add cluster mirage >/dev/null
  local q
  for q in scavenger preemptible; do # preemptible: the QOS of borrowed work (team rules)
    sacctmgr -n list qos format=name -P | grep -qx "$q" || \
      sacctmgr -i add qos "$q" set Priority=0 PreemptMode=requeue >/dev/null
  done
  sacctmgr -i modify qos where name=normal set Preempt=scavenger,preemptible Priority=10 >/dev/null || true
  sacctmgr -n list account format=account -P | grep -qx teama || \
    sacctmgr -i add account teama,teamb cluster=mirage Description=test Organization=mirage >/dev/null
  sacctmgr -n list account format=account -P | grep -qx teamb || \
    sacctmgr -i add account teamb cluster=mirage Description=test Organization=mirage >/dev/null
  sacctmgr -n list assoc user="$u" format=account -P | grep -qx teamb || \
    sacctmgr -i add user "$u" account=teama,teamb defaultaccount=teama cluster=mirage >/dev/null
  sacctmgr -i modify user where name="$u" set qos=normal,scavenger,preemptible defaultqos=normal >/dev/null || true
  sacctmgr -n list assoc user="$u" format=account,qos -P | grep -q '^teamb|.*preemptible' \
    || die "accounting setup failed: user $u not associated with teamb/preemptible"
  if id "$SECOND_USER" >/dev/null 2>&1 && [ "$SECOND_USER" != "$u" ]; then
    sacctmgr -n list assoc user="$SECOND_USER" format=account -P | grep -qx teama || \
      sacctmgr -i add user "$SECOND_USER" account=teama,teamb defaultaccount=teama cluster=mirage >/dev/null
  fi
}

slurmctld_ok() { scontrol ping | grep -q 'is UP'; }
start_slurmctld() {
  if pid_alive "$STATE/run/slurmctld.pid" && slurmctld_ok >/dev/null 2>&1; then return 0; fi
  stop_pid "$STATE/run/slurmctld.pid" slurmctld
  slurmctld || die "slurmctld failed to start"
  wait_for 30 slurmctld slurmctld_ok
}

# nodes_idle: all nodes respond and can run jobs (busy ones included;
# "plnd" is a node the backfill scheduler has planned for a pending job).
nodes_idle() {
  [ "$(sinfo -h -N -p debug -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc|comp|plnd|resv)$')" -eq "$NODE_COUNT" ]
}
start_slurmds() {
  local n
  for n in $NODES; do
    pid_alive "$STATE/run/slurmd-$n.pid" && continue
    slurmd -N "$n" || die "slurmd -N $n failed to start"
  done
  wait_for $((30 + NODE_COUNT)) "slurmd nodes" nodes_idle
}

# slurmd_pidfiles lists the pid files of every slurmd this state dir started,
# whatever MIRAGE_SLURM_NODES says now (a cluster started with more nodes
# must stop whole).
slurmd_pidfiles() {
  compgen -G "$STATE/run/slurmd-*.pid" || true
}

stop_all() {
  local pf
  stop_pid "$STATE/run/slurmctld.pid" slurmctld
  for pf in $(slurmd_pidfiles); do stop_pid "$pf" "slurmd $(basename "$pf" .pid)"; done
  stop_pid "$STATE/run/slurmdbd.pid" slurmdbd
  stop_pid "$STATE/mysql/run/mysqld.pid" mariadbd
  stop_pid "$STATE/run/munged.pid" munged
}

all_up() {
  pid_alive "$STATE/run/munged.pid" && pid_alive "$STATE/mysql/run/mysqld.pid" &&
  pid_alive "$STATE/run/slurmdbd.pid" && pid_alive "$STATE/run/slurmctld.pid" &&
  for n in $NODES; do pid_alive "$STATE/run/slurmd-$n.pid" || return 1; done &&
  munge_ok && slurmctld_ok && nodes_idle && slurmdbd_ok
} >/dev/null 2>&1

# write_env writes the file the tests source. MIRAGE_TEST_SLURM_RELEASE is
# the release the cluster runs (MAJOR.MINOR, from sinfo --version); a newer
# release's env also puts its command wrappers first on PATH (and names them
# in MIRAGE_TEST_SLURM_BIN, for a --slurm-bin).
write_env() {
  local rel
  rel="$(sinfo --version | awk '{print $2}' | cut -d. -f1,2)"
  {
    echo "# written by scripts/slurm-up.sh: the loopback Slurm cluster"
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "export MIRAGE_TEST_SLURM_CONF=$SLURM_CONF"
    echo "export MIRAGE_TEST_SLURM_RELEASE=$rel"
    echo "export MIRAGE_TEST_SLURM_NODES=$NODE_COUNT"
    if id "$SECOND_USER" >/dev/null 2>&1 && [ "$SECOND_USER" != "$SLURM_USER" ]; then
      echo "export MIRAGE_TEST_SECOND_USER=$SECOND_USER"
    fi
    if [ -n "$SLURM_BIN" ]; then
      echo "export MIRAGE_TEST_SLURM_BIN=$SLURM_BIN"
      echo "export PATH=$SLURM_BIN:\$PATH"
    fi
  } > "$STATE/env.sh.new.$$"
  mv -f "$STATE/env.sh.new.$$" "$STATE/env.sh"
}
