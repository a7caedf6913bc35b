#!/usr/bin/env bash
# Start a real Kubernetes API server on 127.0.0.1 for the integration tests:
# Debian's etcd plus kube-apiserver built from the Go module proxy (wrapper
# module scripts/k8s/apiserver, binary cached by version), token
# authentication, RBAC, and the least-privilege role mirage runs with.
#
# Writes, under ${MIRAGE_TEST_DIR:-/tmp/mirage-test}/k8s:
#   admin.kubeconfig   system:masters (tests use it to create Nodes and Pods)
#   mirage.kubeconfig  user "mirage", bound to the ClusterRole in scripts/k8s/rbac/
#   env.sh             exports MIRAGE_TEST_KUBECONFIG and MIRAGE_TEST_ADMIN_KUBECONFIG
#
# Idempotent: when the servers from a previous run are still up and ready it
# only rewrites env.sh. There is no kubelet and no controller: Nodes are plain
# API objects, pods must set spec.nodeName, a Job creates no pods.
#
# Environment: MIRAGE_CACHE (binary cache, default ~/.cache/mirage),
# MIRAGE_TEST_DIR, MIRAGE_K8S_BUILD_ONLY=1 (build/cache the binary and exit).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

K8S_VERSION=v1.33.13
CACHE="${MIRAGE_CACHE:-$HOME/.cache/mirage}"
TEST_DIR="${MIRAGE_TEST_DIR:-/tmp/mirage-test}"
DIR="$TEST_DIR/k8s"
BIN="$CACHE/kube-apiserver-$K8S_VERSION"
ETCD="${ETCD:-etcd}"

log() { echo "k8s-up: $*" >&2; }

tails() {
  for f in "$DIR"/etcd.log "$DIR"/kube-apiserver.log; do
    if [ -f "$f" ]; then
      echo "---- last lines of $f" >&2
      tail -n 40 "$f" >&2
    fi
  done
}

fail() {
  log "FAILED: $*"
  tails
  # Leave nothing half-started behind.
  "$ROOT/scripts/k8s-down.sh" >/dev/null 2>&1 || true
  exit 1
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# --- 1. kube-apiserver binary (built once per version, then cached) ---------
build() {
  command -v go >/dev/null || fail "go not found (needed once to build kube-apiserver $K8S_VERSION)"
  mkdir -p "$CACHE"
  local tmp="$BIN.tmp.$$"
  local ld="-s -w"
  ld+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/component-base/version.gitMajor=1"
  ld+=" -X k8s.io/component-base/version.gitMinor=33"
  ld+=" -X k8s.io/component-base/version.gitTreeState=clean"
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/client-go/pkg/version.gitMajor=1"
  ld+=" -X k8s.io/client-go/pkg/version.gitMinor=33"
  log "building kube-apiserver $K8S_VERSION from the Go module proxy (first run only: about 5 min on 2 cores)"
  local t0=$SECONDS
  # GOWORK=off and -mod=readonly: build exactly what go.mod/go.sum pin.
  if ! (cd "$ROOT/scripts/k8s/apiserver" &&
        GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
          go build -trimpath -ldflags "$ld" -o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver) >"$CACHE/kube-apiserver-build.log" 2>&1; then
    rm -f "$tmp"
    tail -n 40 "$CACHE/kube-apiserver-build.log" >&2
    fail "building kube-apiserver (log: $CACHE/kube-apiserver-build.log)"
  fi
  mv -f "$tmp" "$BIN"
  log "built $BIN in $((SECONDS - t0)) s"
}

if [ -x "$BIN" ]; then
  log "using cached $BIN"
else
  build
fi
[ "${MIRAGE_K8S_BUILD_ONLY:-}" = 1 ] && exit 0

command -v "$ETCD" >/dev/null || fail "etcd not found: apt-get install etcd-server"
command -v openssl >/dev/null || fail "openssl not found: apt-get install openssl"
command -v curl >/dev/null || fail "curl not found: apt-get install curl"

mkdir -p "$DIR"
ENV="$DIR/env.sh"
write_env() {
  cat >"$ENV" <<EOF
# written by scripts/k8s-up.sh
export MIRAGE_TEST_KUBECONFIG=$DIR/mirage.kubeconfig
export MIRAGE_TEST_ADMIN_KUBECONFIG=$DIR/admin.kubeconfig
EOF
}

ready() {
  # /readyz with the admin token and the cluster CA.
  [ -f "$DIR/port" ] && [ -f "$DIR/admin.token" ] || return 1
  curl -fsS --max-time 3 --cacert "$DIR/pki/ca.crt" \
    -H "Authorization: Bearer $(cat "$DIR/admin.token")" \
    "https://127.0.0.1:$(cat "$DIR/port")/readyz" >/dev/null 2>&1
}

# --- 2. already running? -----------------------------------------------------
if alive "$DIR/etcd.pid" && alive "$DIR/kube-apiserver.pid" && ready; then
  write_env
  log "already running on https://127.0.0.1:$(cat "$DIR/port"); wrote $ENV"
  exit 0
fi
# Leftovers of a broken run: stop them and start clean.
"$ROOT/scripts/k8s-down.sh" >/dev/null 2>&1 || true
rm -rf "$DIR/etcd-data"

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# --- 3. certificates, service-account keys, tokens ---------------------------
PKI="$DIR/pki"
mkdir -p "$PKI"
if [ ! -f "$PKI/server.crt" ]; then
  log "generating a CA, a serving certificate and the service-account key pair"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=mirage-test-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$PKI/server.key" -out "$PKI/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >"$PKI/server.ext"
  openssl x509 -req -in "$PKI/server.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -extfile "$PKI/server.ext" -out "$PKI/server.crt" 2>/dev/null
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
fi
if [ ! -f "$DIR/tokens.csv" ]; then
  openssl rand -hex 24 >"$DIR/admin.token"
  openssl rand -hex 24 >"$DIR/mirage.token"
  # token,user,uid,"group1,group2"
  {
    echo "$(cat "$DIR/admin.token"),admin,admin,\"system:masters\""
    echo "$(cat "$DIR/mirage.token"),mirage,mirage"
  } >"$DIR/tokens.csv"
  chmod 600 "$DIR/tokens.csv" "$DIR/admin.token" "$DIR/mirage.token"
fi

# --- 4. etcd ------------------------------------------------------------------
ETCD_PORT=$(free_port)
ETCD_PEER=$(free_port)
log "starting etcd on 127.0.0.1:$ETCD_PORT"
setsid "$ETCD" --name mirage-test --data-dir "$DIR/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "mirage-test=http://127.0.0.1:$ETCD_PEER" \
  --unsafe-no-fsync --logger zap --log-level warn \
  </dev/null >"$DIR/etcd.log" 2>&1 &
echo $! >"$DIR/etcd.pid"
for i in $(seq 1 100); do
  curl -fsS --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"' && break
  alive "$DIR/etcd.pid" || fail "etcd exited"
  [ "$i" = 100 ] && fail "etcd not healthy after 20 s"
  sleep 0.2
done

# --- 5. kube-apiserver ----------------------------------------------------------
PORT=$(free_port)
echo "$PORT" >"$DIR/port"
log "starting kube-apiserver $K8S_VERSION on https://127.0.0.1:$PORT"
setsid "$BIN" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$PORT" \
  --cert-dir "$PKI" --tls-cert-file "$PKI/server.crt" --tls-private-key-file "$PKI/server.key" \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-account-issuer "https://127.0.0.1:$PORT" \
  --token-auth-file "$DIR/tokens.csv" \
  --authorization-mode RBAC \
  --service-cluster-ip-range 10.0.0.0/24 \
  --disable-admission-plugins ServiceAccount \
  --endpoint-reconciler-type none \
  --profiling=false \
  </dev/null >"$DIR/kube-apiserver.log" 2>&1 &
echo $! >"$DIR/kube-apiserver.pid"
t0=$SECONDS
until ready; do
  alive "$DIR/kube-apiserver.pid" || fail "kube-apiserver exited"
  [ $((SECONDS - t0)) -ge 90 ] && fail "kube-apiserver not ready after 90 s"
  sleep 0.3
done
log "kube-apiserver ready after $((SECONDS - t0)) s"

# --- 6. kubeconfigs, RBAC, priority classes ---------------------------------
kubeconfig() { # user token-file
  cat >"$DIR/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: mirage-test
  cluster:
    server: https://127.0.0.1:$PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $1
  user:
    token: $(cat "$2")
contexts:
- name: $1@mirage-test
  context:
    cluster: mirage-test
    user: $1
current-context: $1@mirage-test
EOF
  chmod 600 "$DIR/$1.kubeconfig"
}
kubeconfig admin "$DIR/admin.token"
kubeconfig mirage "$DIR/mirage.token"

# Apply scripts/k8s/rbac/*.json with curl (no kubectl needed); 409 = already there.
api() { # method path [curl args...] -> prints the HTTP status
  local m=$1 p=$2
  shift 2
  curl -sS -o "$DIR/api.out" -w '%{http_code}' --max-time 10 --cacert "$PKI/ca.crt" -X "$m" "$@" \
    "https://127.0.0.1:$PORT$p"
}
for f in "$ROOT"/scripts/k8s/rbac/*.json; do
  case "$(basename "$f")" in
    *-clusterrole.json) path=/apis/rbac.authorization.k8s.io/v1/clusterroles ;;
    *-clusterrolebinding.json) path=/apis/rbac.authorization.k8s.io/v1/clusterrolebindings ;;
    *-priorityclass-*.json) path=/apis/scheduling.k8s.io/v1/priorityclasses ;;
    *) fail "don't know where to create $f" ;;
  esac
  code=$(api POST "$path" -H "Authorization: Bearer $(cat "$DIR/admin.token")" \
    -H 'Content-Type: application/json' --data-binary "@$f") || true
  case "$code" in
    201 | 409) ;;
    *) cat "$DIR/api.out" >&2; fail "creating $(basename "$f"): HTTP $code" ;;
  esac
done
# The binding takes effect once the authorizer's informer sees it.
for i in $(seq 1 50); do
  code=$(api GET /api/v1/nodes -H "Authorization: Bearer $(cat "$DIR/mirage.token")") || true
  [ "$code" = 200 ] && break
  [ "$i" = 50 ] && { cat "$DIR/api.out" >&2; fail "RBAC for user mirage not effective after 10 s (HTTP $code)"; }
  sleep 0.2
done
rm -f "$DIR/api.out"

write_env
log "ready: https://127.0.0.1:$PORT (etcd 127.0.0.1:$ETCD_PORT); source $ENV"
