#!/usr/bin/env bash
# Install (or take from the cache) the binaries of a newer Slurm release for
# scripts/slurm-newer/up.sh, and print the directory they are in.
#
#   scripts/slurm-newer/install.sh 24.11   # Debian 13 packages in a chroot (~3 min cold)
#   scripts/slurm-newer/install.sh 25.05   # built from source (~16 min cold on 2 cores)
#   scripts/slurm-newer/install.sh 25.05 --cached-only   # exit 3 unless already built
#
# 24.11: `debootstrap --variant=minbase` of Debian 13 (trixie) with its Slurm,
# MUNGE and MariaDB packages. The chroot is packed once into
# $CACHE/slurm-24.11/trixie-slurm-wlm_$SLURM_DEB_VERSION.tar.zst (the key is
# the pinned package version) and unpacked into $DEST (seconds) on later runs.
# 25.05: SchedMD's release tarball (slurm-25.05.8.tar.gz from ../shared/slurm-newer
# or $SLURM_TARBALL), configured with --enable-multiple-slurmd, built under
# `nice -n 19` and installed into /var/cache/mirage/slurm-25.05.8 as root (so
# that other users can run it), $CACHE/slurm-25.05.8 otherwise (the key is
# the version; MIRAGE_SLURM25_PREFIX overrides the place).
set -euo pipefail
REL="${1:?usage: install.sh 24.11|25.05 [--cached-only]}"
CACHED_ONLY="${2:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${MIRAGE_CACHE:-$HOME/.cache/mirage}"
log() { echo "slurm-$REL: $*" >&2; }

# The releases: change a pin here and the cache key changes with it.
SLURM_DEB_SUITE=trixie
SLURM_DEB_VERSION="${SLURM_DEB_VERSION:-24.11.5-4+deb13u1}"   # trixie's slurm-wlm
SLURM_SRC_VERSION=25.05.8
# libsqlite3-0: the e2e tests' mirage binary (built on the host) runs inside jobs.
DEB_PKGS=slurm-wlm,slurmctld,slurmd,slurm-client,slurmdbd,munge,mariadb-server,libsqlite3-0

case "$REL" in
24.11)
  DEST="${2:-}"; [ "$DEST" = --cached-only ] && DEST=""
  key="$SLURM_DEB_SUITE-slurm-wlm_$SLURM_DEB_VERSION"
  tarball="$CACHE/slurm-24.11/$key.tar.zst"
  if [ "$SLURM_DEB_VERSION" = any ]; then # whatever trixie ships now (to find the next pin)
    tarball="$(ls -t "$CACHE/slurm-24.11/$SLURM_DEB_SUITE"-slurm-wlm_*.tar.zst 2>/dev/null | head -n 1 || true)"
    tarball="${tarball:-$CACHE/slurm-24.11/none}"
  fi
  if [ ! -f "$tarball" ]; then
    [ "$CACHED_ONLY" = --cached-only ] && { log "not cached ($tarball)"; exit 3; }
    command -v debootstrap >/dev/null && command -v zstd >/dev/null || {
      log "installing debootstrap and zstd"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap zstd >/dev/null
    }
    mirror="${DEBIAN_MIRROR:-$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)}"
    mirror="${mirror:-http://deb.debian.org/debian}"
    mkdir -p "$CACHE/slurm-24.11"
    work="$(mktemp -d "$CACHE/slurm-24.11/build.XXXXXX")"
    trap 'rm -rf --one-file-system "$work"' EXIT
    log "debootstrap $SLURM_DEB_SUITE from $mirror (a few minutes)"
    t0=$(date +%s)
    debootstrap --variant=minbase --include="$DEB_PKGS" "$SLURM_DEB_SUITE" "$work/root" "$mirror" \
      > "$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; log "debootstrap failed"; exit 1; }
    got="$(chroot "$work/root" dpkg-query -W -f='${Version}' slurm-wlm)"
    if [ "$SLURM_DEB_VERSION" = any ]; then
      key="$SLURM_DEB_SUITE-slurm-wlm_$got"; tarball="$CACHE/slurm-24.11/$key.tar.zst"
    elif [ "$got" != "$SLURM_DEB_VERSION" ]; then
      log "ERROR: $SLURM_DEB_SUITE now ships slurm-wlm $got, the scripts pin $SLURM_DEB_VERSION:"
      log "  update SLURM_DEB_VERSION in scripts/slurm-newer/install.sh (SLURM_DEB_VERSION=any builds what it ships)"
      exit 1
    fi
    # Debian 13's libmariadb3 (Connector/C 3.4) kills slurmdbd 24.11.5 at start
    # ("5027 Number of columns in result ... exceeds maximum", then
    # "fatal: _check_mysql_concat_is_sane"): slurmdbd runs against Debian 12's
    # libmariadb.so.3 (3.3), copied from the host (see up.sh's wrappers).
    mkdir -p "$work/root/opt/bookworm-libmariadb"
    cp -L /usr/lib/x86_64-linux-gnu/libmariadb.so.3 "$work/root/opt/bookworm-libmariadb/"
    chroot "$work/root" apt-get clean
    rm -rf "$work/root/var/lib/apt/lists/"* "$work/root/usr/share/doc" "$work/root/usr/share/man"
    touch "$work/root/etc/mirage-slurm-chroot" # the wrappers' "already inside" marker
    chroot "$work/root" dpkg-query -W -f='${Package} ${Version}\n' > "$work/root/etc/mirage-slurm-packages"
    tar -C "$work/root" -cf - . | zstd -q -T0 -3 -o "$tarball.tmp"
    mv -f "$tarball.tmp" "$tarball"
    log "cached $tarball ($(du -h "$tarball" | cut -f1)) in $(( $(date +%s) - t0 ))s"
  fi
  [ -n "$DEST" ] || { echo "$tarball"; exit 0; }
  key="$(basename "$tarball" .tar.zst)"
  if [ "$(cat "$DEST/etc/mirage-slurm-key" 2>/dev/null)" != "$key" ]; then
    # $DEST is never mounted on: up.sh mounts only inside private mount namespaces.
    rm -rf --one-file-system "$DEST"; mkdir -p "$DEST"
    t0=$(date +%s)
    zstd -q -d -c "$tarball" | tar -C "$DEST" -xf -
    cp /etc/hosts "$DEST/etc/hosts"
    echo "$key" > "$DEST/etc/mirage-slurm-key"
    log "unpacked $key into $DEST in $(( $(date +%s) - t0 ))s"
  fi
  # Jobs run the tests' mirage binaries, built on the host: give the chroot
  # the host libraries they link that trixie's minbase lacks (xgboost's).
  if [ -f /usr/lib/x86_64-linux-gnu/libxgboost.so.0 ] && [ ! -f "$DEST/usr/local/lib/libxgboost.so.0" ]; then
    for lib in /usr/lib/x86_64-linux-gnu/libxgboost.so.0 $(ldd /usr/lib/x86_64-linux-gnu/libxgboost.so.0 | awk '$3 ~ /^\// {print $3}'); do
      [ -e "$DEST/usr/lib/x86_64-linux-gnu/$(basename "$lib")" ] || cp -L "$lib" "$DEST/usr/local/lib/"
    done
    chroot "$DEST" /sbin/ldconfig
  fi
  echo "$DEST"
  ;;
25.05)
  # The prefix is built into the binaries (rpath, plugin dir), and the
  # two-user tests' second user runs them: as root the build goes under
  # /var/cache/mirage, which every user can enter, not under root's home
  # (0700), where the second user could run no command and the two-user
  # tests could not run on 25.05. MIRAGE_SLURM25_PREFIX overrides it.
  prefix="$CACHE/slurm-$SLURM_SRC_VERSION"
  [ "$(id -u)" -eq 0 ] && prefix="/var/cache/mirage/slurm-$SLURM_SRC_VERSION"
  prefix="${MIRAGE_SLURM25_PREFIX:-$prefix}"
  if [ -x "$prefix/sbin/slurmctld" ] && [ -f "$prefix/.complete" ]; then echo "$prefix"; exit 0; fi
  if [ "$prefix" != "$CACHE/slurm-$SLURM_SRC_VERSION" ] && [ -f "$CACHE/slurm-$SLURM_SRC_VERSION/.complete" ]; then
    log "the build in $CACHE/slurm-$SLURM_SRC_VERSION is one other users cannot run (root's home): it is built again into $prefix (remove the old one)"
  fi
  [ "$CACHED_ONLY" = --cached-only ] && { log "not cached ($prefix)"; exit 3; }
  tarball="${SLURM_TARBALL:-}"
  for t in "$tarball" "$HERE/../../../shared/slurm-newer/slurm-$SLURM_SRC_VERSION.tar.gz" \
           "/work/shared/slurm-newer/slurm-$SLURM_SRC_VERSION.tar.gz"; do
    [ -n "$t" ] && [ -f "$t" ] && { tarball="$t"; break; }
  done
  [ -f "$tarball" ] || { log "ERROR: slurm-$SLURM_SRC_VERSION.tar.gz not found (set SLURM_TARBALL)"; exit 1; }
  pkgs=(gcc make libmunge-dev libjson-c-dev libmariadb-dev libmariadb-dev-compat munge mariadb-server)
  missing=(); for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
  work="$(mktemp -d "${TMPDIR:-/tmp}/slurm-$SLURM_SRC_VERSION-build.XXXXXX")"
  trap 'rm -rf --one-file-system "$work"' EXIT
  tar -xzf "$tarball" --strip-components=1 -C "$work"
  log "building from $tarball under nice -n 19 (about 16 minutes on 2 cores); log in $work/build.log"
  t0=$(date +%s)
  rm -rf "$prefix"
  mkdir -p -m 0755 "$(dirname "$prefix")"
  # --enable-multiple-slurmd: several `slurmd -N` on one host.
  (cd "$work" && nice -n 19 ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" --disable-debug \
      --enable-multiple-slurmd --with-json --with-munge --with-mysql_config=/usr/bin &&
   nice -n 19 make -j"$(nproc)" && nice -n 19 make install) > "$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log" >&2; rm -rf "$prefix"; log "build failed"; exit 1; }
  rm -rf "$prefix/share/man" "$prefix/share/doc"
  touch "$prefix/.complete"
  log "built into $prefix in $(( $(date +%s) - t0 ))s"
  echo "$prefix"
  ;;
*) echo "usage: install.sh 24.11|25.05 [--cached-only]" >&2; exit 2 ;;
esac
