#!/usr/bin/env bash
# Install everything mirage's build and tests need on a fresh Debian 12 machine.
# Idempotent: packages already present are not reinstalled. Run as root (CI and
# the developer machines are root); otherwise prefix with sudo.
set -euo pipefail

# build (alone with `deps.sh build`: make build, make install)
BUILD_PKGS=(gcc g++ make libsqlite3-dev libxgboost-dev)
PKGS=(
  "${BUILD_PKGS[@]}"
  # real Slurm 22.05 on loopback (scripts/slurm-up.sh)
  slurm-wlm slurmctld slurmd slurm-client slurmdbd munge mariadb-server gettext-base
  # real etcd for the kube-apiserver (scripts/k8s-up.sh)
  etcd-server openssl
  # headless browser for the HTML report's acceptance test (eval)
  chromium
  # GNU time: the daemon-scale benchmark's CPU and peak RSS (slurm/scale_bench_test.go)
  time
)
only_build=false
if [ "${1:-}" = build ]; then
  PKGS=("${BUILD_PKGS[@]}")
  only_build=true
fi

if $only_build && ! command -v dpkg-query >/dev/null; then
  # Not Debian: the build needs a C compiler and the SQLite and libxgboost
  # headers; say so rather than guess at another package manager.
  echo "deps: not a Debian system: make sure gcc and the SQLite and libxgboost development files are installed" \
    "(or build without training: make build GOTAGS=)"
  exit 0
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # policy-rc.d keeps the packages' own services from starting: the project's
  # scripts start private instances on 127.0.0.1 instead.
  # (Not for the build packages alone, which have no services.)
  if ! $only_build && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
  fi
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "deps: Debian packages present"
fi

# Go tools, pinned, cached outside the work tree so fresh clones reuse them.
if $only_build; then
  exit 0
fi

CACHE="${MIRAGE_CACHE:-$HOME/.cache/mirage}"
mkdir -p "$CACHE/bin"
if [ ! -x "$CACHE/bin/staticcheck" ]; then
  echo "deps: installing staticcheck"
  GOBIN="$CACHE/bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
if [ ! -x "$CACHE/bin/benchstat" ]; then
  echo "deps: installing benchstat"
  GOBIN="$CACHE/bin" go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da || echo "deps: benchstat not installed (optional)"
fi
go mod download
