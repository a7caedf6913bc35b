#!/usr/bin/env bash
# Start a private Slurm 24.11 or 25.05 cluster on 127.0.0.1 beside the 22.05
# one of scripts/slurm-up.sh: the same cluster (4 nodes x 4 fake GPUs, or
# MIRAGE_SLURM_NODES; MIRAGE_SLURM_SCHED_CONF as there;
# partitions debug and long, accounts teama/teamb, MUNGE, MariaDB, slurmdbd)
# on its own ports, under ${MIRAGE_TEST_DIR:-/tmp/mirage-test}/slurm-RELEASE,
# with its env file there (source it to point the tests at this cluster).
#
#   scripts/slurm-newer/up.sh 24.11   # Debian 13's packages in a chroot
#   scripts/slurm-newer/up.sh 25.05   # built from source (cached; see install.sh)
#
# The binaries come from install.sh (cached). STATE/bin holds one wrapper per
# command; STATE/cluster.env tells scripts/slurm/lib.sh the ports, the
# wrappers and the templates that differ, so scripts/slurm-up.sh,
# slurm-down.sh and slurm-ctl.sh run this cluster unchanged with
# MIRAGE_SLURM_STATE=STATE. Idempotent, like scripts/slurm-up.sh.
#
# 24.11's wrappers run each command in the chroot inside a private mount
# namespace (unshare -m) with /proc, /sys, /tmp and the test dir mounted
# there: the mounts exist only for the chrooted processes, so nothing on the
# host is mounted into the chroot (an rm -rf of the test dir stays in it).
# Job scripts and their output must therefore live under /tmp or the test dir.
set -euo pipefail
REL="${1:?usage: up.sh 24.11|25.05}"
HERE="$(cd "$(dirname "$0")" && pwd)"
MIRAGE_TEST_DIR="$(mkdir -p "${MIRAGE_TEST_DIR:-/tmp/mirage-test}" && cd "${MIRAGE_TEST_DIR:-/tmp/mirage-test}" && pwd)"
STATE="$MIRAGE_TEST_DIR/slurm-$REL"
log() { echo "slurm-$REL: $*" >&2; }

case "$REL" in
24.11) BASE=26000 ;; # MariaDB 26306, slurmctld 26817, slurmdbd 26819, slurmd 26821-26824
25.05) BASE=27000 ;; # the same + 1000
*) echo "usage: up.sh 24.11|25.05" >&2; exit 2 ;;
esac
# MIRAGE_SLURM_PORT_OFFSET moves every port, so that two test clusters of the
# same release (two work trees) can run side by side.
BASE=$((BASE + ${MIRAGE_SLURM_PORT_OFFSET:-0}))
t0=$(date +%s)
mkdir -p "$STATE/bin"

# write_file PATH: stdin replaces PATH only when it differs (no needless restarts).
write_file() { local tmp="$1.new.$$"; cat > "$tmp"; if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi; }

case "$REL" in
24.11)
  ROOT="$("$HERE/install.sh" 24.11 "$STATE/root")"
  # Mounted in each command's namespace: /tmp (job scripts, the tests' temp
  # dirs) and the test dir, if elsewhere, at the same paths as on the host.
  binds="/tmp"
  case "$MIRAGE_TEST_DIR/" in /tmp/*) ;; *) binds="$binds $MIRAGE_TEST_DIR" ;; esac
  write_file "$STATE/bin/chroot-run" <<EOS
#!/bin/sh
# Written by scripts/slurm-newer/up.sh: runs the command this link is named
# after from the Slurm 24.11 chroot $ROOT.
name="\$(basename "\$0")"
if [ -e /etc/mirage-slurm-chroot ]; then # already inside (a job calling sbatch)
  PATH="/usr/sbin:/usr/bin:/sbin:/bin:\$PATH" exec "\$name" "\$@"
fi
sys=false # /sys for the daemons only (mounting it costs a tenth of a second)
case "\$name" in
# Debian 13's libmariadb kills slurmdbd 24.11.5 (see install.sh): Debian 12's.
slurmdbd) sys=true; set -- env LD_LIBRARY_PATH=/opt/bookworm-libmariadb "\$name" "\$@" ;;
slurmctld|slurmd|munged|mariadbd|mariadb-install-db) sys=true; set -- "\$name" "\$@" ;;
*) set -- "\$name" "\$@" ;;
esac
# MIRAGE_CHROOT_USERSPEC=USER:GROUP (root only, like the wrapper itself):
# run the command as that user inside the chroot (the two-user tests).
exec unshare --mount --propagation private -- /bin/sh -ec '
  R="\$1" sys="\$2" us="\$3"; shift 3
  mount -t proc proc "\$R/proc"
  if \$sys; then mount --rbind /sys "\$R/sys"; fi
  for d in $binds; do mkdir -p "\$R\$d"; mount --bind "\$d" "\$R\$d"; done
  if [ -n "\$us" ]; then set -- --userspec="\$us" "\$R" "\$@"; else set -- "\$R" "\$@"; fi
  PATH="/usr/sbin:/usr/bin:/sbin:/bin:\$PATH" exec chroot "\$@"' chroot-run "$ROOT" "\$sys" "\${MIRAGE_CHROOT_USERSPEC:-}" "\$@"
EOS
  chmod 755 "$STATE/bin/chroot-run"
  # The two-user tests' second user (scripts/slurm/lib.sh) must resolve
  # inside the chroot too, where slurmd starts its jobs.
  u2="${MIRAGE_TEST_SECOND_USER:-mirageb}"
  if [ "$(id -u)" -eq 0 ]; then
    id "$u2" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$u2" \
      || id "$u2" >/dev/null 2>&1 || { log "ERROR: could not add the second test user $u2"; exit 1; }
    for db in passwd group; do
      line="$(getent "$db" "$u2" || true)"
      if [ -n "$line" ] && ! grep -q "^$u2:" "$ROOT/etc/$db"; then echo "$line" >> "$ROOT/etc/$db"; fi
    done
  fi
  cmds="$(cd "$ROOT" && ls usr/bin/s* usr/sbin/slurm* 2>/dev/null | xargs -n1 basename | grep -E '^(s[a-z]+|slurm[a-z]+)$' || true)"
  cmds="$cmds munge unmunge munged mungekey mariadb mariadb-admin mariadb-install-db mariadbd"
  for c in $cmds; do
    [ "$c" = chroot-run ] || [ -L "$STATE/bin/$c" ] || ln -sfn chroot-run "$STATE/bin/$c"
  done
  ;;
25.05)
  PREFIX="$("$HERE/install.sh" 25.05)"
  for f in "$PREFIX"/bin/* "$PREFIX"/sbin/*; do ln -sfn "$f" "$STATE/bin/$(basename "$f")"; done
  ;;
esac

write_file "$STATE/cluster.env" <<EOF2
# Written by scripts/slurm-newer/up.sh $REL, read by scripts/slurm/lib.sh.
MIRAGE_SLURM_MARIADB_PORT=$((BASE+306))
MIRAGE_SLURM_CTLD_PORT=$((BASE+817))
MIRAGE_SLURM_DBD_PORT=$((BASE+819))
MIRAGE_SLURM_SLURMD_BASE_PORT=$((BASE+820))
SLURM_BIN=$STATE/bin
TEMPLATE_OVERLAY=$HERE/templates
MARIADB_OS_USER=$( [ "$REL" = 24.11 ] && echo root )
EOF2
log "binaries ready in $(( $(date +%s) - t0 ))s"
MIRAGE_TEST_DIR="$MIRAGE_TEST_DIR" MIRAGE_SLURM_STATE="$STATE" "$HERE/../slurm-up.sh"
log "up in $(( $(date +%s) - t0 ))s: use . $STATE/env.sh"
