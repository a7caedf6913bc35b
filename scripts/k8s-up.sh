#!/usr/bin/env bash
# Start a Kubernetes control plane on 127.0.0.1 for the integration tests:
# Debian's etcd; kube-apiserver, kube-controller-manager and kube-scheduler
# built from the Go module proxy (wrapper module scripts/k8s/apiserver, one
# pinned version); and kwok (sigs.k8s.io/kwok, wrapper module
# scripts/k8s/kwok) in place of kubelets: it keeps the nodes labelled
# kwok.x-k8s.io/node=fake alive and plays their pods' lifecycles
# (scripts/k8s/kwok/stages.yaml: running, completing after an annotated
# delay, failing at their deadline, leaving at the end of their grace
# period). Binaries are cached by version. Token authentication, RBAC, the
# least-privilege role mirage runs with; the scheduler runs as
# system:kube-scheduler, the controller manager and kwok as admin.
#
# Writes, under ${MIRAGE_TEST_DIR:-/tmp/mirage-test}/k8s:
#   admin.kubeconfig   system:masters (tests use it to create Nodes and Pods)
#   mirage.kubeconfig  user "mirage", bound to the ClusterRole in scripts/k8s/rbac/
#   env.sh             exports MIRAGE_TEST_KUBECONFIG, MIRAGE_TEST_ADMIN_KUBECONFIG
#                      and MIRAGE_TEST_KWOK_LABEL (the label kwok manages nodes by)
#
# Before it says ready, a probe node and pod go through the whole loop (kwok
# readies the node, the scheduler binds the pod, kwok runs it). Idempotent:
# when everything from a previous run is still up and ready it only
# rewrites env.sh.
#
# Environment: MIRAGE_CACHE (binary cache, default ~/.cache/mirage),
# MIRAGE_TEST_DIR, MIRAGE_K8S_BUILD_ONLY=1 (build/cache the binaries and exit).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The versions are the wrapper modules' pins (their go.mod), so the cache
# below is keyed on exactly what gets built: bump a go.mod, get a new binary.
# mod_version MODULE GOMOD: the version GOMOD requires of MODULE.
mod_version() {
  local v
  v=$(awk -v m="$1" '$1 == m { print $2; exit }' "$2")
  [ -n "$v" ] || { echo "k8s-up: $2 does not require $1" >&2; exit 1; }
  echo "$v"
}
K8S_VERSION=$(mod_version k8s.io/kubernetes scripts/k8s/apiserver/go.mod)
K8S_MINOR=${K8S_VERSION#v1.}
K8S_MINOR=${K8S_MINOR%%.*}
KWOK_VERSION=$(mod_version sigs.k8s.io/kwok scripts/k8s/kwok/go.mod)
CACHE="${MIRAGE_CACHE:-$HOME/.cache/mirage}"
TEST_DIR="${MIRAGE_TEST_DIR:-/tmp/mirage-test}"
DIR="$TEST_DIR/k8s"
# The control plane's binaries, each cached under its version.
K8S_TOOLS=(kube-apiserver kube-scheduler kube-controller-manager)
k8s_bin() { echo "$CACHE/$1-$K8S_VERSION"; }
BIN=$(k8s_bin kube-apiserver)
SCHED=$(k8s_bin kube-scheduler)
KCM=$(k8s_bin kube-controller-manager)
KWOK="$CACHE/kwok-$KWOK_VERSION"
ETCD="${ETCD:-etcd}"
KWOK_LABEL=kwok.x-k8s.io/node=fake # the nodes kwok keeps alive

log() { echo "k8s-up: $*" >&2; }

tails() {
  for f in "$DIR"/*.log; do
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

# --- 1. binaries (built once per version from the Go module proxy, then cached)
# build_go MODULE_DIR LOG LDFLAGS OUTDIR PACKAGE...: one go build of the given
# main packages of a wrapper module (GOWORK=off, -mod=readonly: exactly what
# its go.mod/go.sum pin), each binary written to OUTDIR under its own name.
build_go() {
  local mod=$1 blog=$2 ld=$3 out=$4
  shift 4
  command -v go >/dev/null || fail "go not found (needed once to build $*)"
  if ! (cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
          go build -trimpath -ldflags "$ld" -o "$out/" "$@") >"$blog" 2>&1; then
    tail -n 40 "$blog" >&2
    fail "building $* (log: $blog)"
  fi
}

# The Kubernetes binaries missing from the cache, in one go build (they share
# most packages). Cold (empty Go module and build caches), on 2 cores:
# kube-apiserver alone 2 min 50 s on a quiet machine (results/test-times-fresh.md);
# all three 850 s of CPU (725 user + 126 sys), 49 min wall on a machine shared
# with four other builds (28 % of the CPU); kwok 237 s of CPU, 8 min wall.
build_k8s() {
  local missing=() t
  for t in "${K8S_TOOLS[@]}"; do [ -x "$(k8s_bin "$t")" ] || missing+=("$t"); done
  ((${#missing[@]})) || return 0
  mkdir -p "$CACHE"
  local tmp="$CACHE/k8s-build.$$" pkgs=()
  mkdir -p "$tmp"
  for t in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$t"); done
  local ld="-s -w"
  ld+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/component-base/version.gitMajor=1"
  ld+=" -X k8s.io/component-base/version.gitMinor=$K8S_MINOR"
  ld+=" -X k8s.io/component-base/version.gitTreeState=clean"
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/client-go/pkg/version.gitMajor=1"
  ld+=" -X k8s.io/client-go/pkg/version.gitMinor=$K8S_MINOR"
  log "building ${missing[*]} $K8S_VERSION from the Go module proxy (once per version)"
  local t0=$SECONDS
  build_go "$ROOT/scripts/k8s/apiserver" "$CACHE/k8s-build.log" "$ld" "$tmp" "${pkgs[@]}"
  for t in "${missing[@]}"; do mv -f "$tmp/$t" "$(k8s_bin "$t")"; done
  rmdir "$tmp" 2>/dev/null || rm -rf "$tmp"
  log "built ${missing[*]} in $((SECONDS - t0)) s"
}

# The kwok controller (fake kubelets: node heartbeats, pod lifecycles by Stages).
build_kwok() {
  [ -x "$KWOK" ] && return 0
  mkdir -p "$CACHE"
  local tmp="$CACHE/kwok-build.$$"
  mkdir -p "$tmp"
  log "building kwok $KWOK_VERSION from the Go module proxy (once per version)"
  local t0=$SECONDS
  build_go "$ROOT/scripts/k8s/kwok" "$CACHE/kwok-build.log" \
    "-s -w" "$tmp" sigs.k8s.io/kwok/cmd/kwok
  mv -f "$tmp/kwok" "$KWOK"
  rmdir "$tmp"
  log "built $KWOK in $((SECONDS - t0)) s"
}

build_k8s
build_kwok
for b in "$BIN" "$SCHED" "$KCM" "$KWOK"; do log "using $b"; done
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
export MIRAGE_TEST_KWOK_LABEL=$KWOK_LABEL
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
PROCS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
all_alive() {
  local p
  for p in "${PROCS[@]}"; do alive "$DIR/$p.pid" || return 1; done
}
if all_alive && ready; then
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
# One token per identity: admin (system:masters: the tests, the controller
# manager and kwok), mirage (scripts/k8s/rbac/) and the scheduler (the
# bootstrap role system:kube-scheduler).
if ! grep -q 'system:kube-scheduler' "$DIR/tokens.csv" 2>/dev/null; then
  openssl rand -hex 24 >"$DIR/admin.token"
  openssl rand -hex 24 >"$DIR/mirage.token"
  openssl rand -hex 24 >"$DIR/scheduler.token"
  # token,user,uid,"group1,group2"
  {
    echo "$(cat "$DIR/admin.token"),admin,admin,\"system:masters\""
    echo "$(cat "$DIR/mirage.token"),mirage,mirage"
    echo "$(cat "$DIR/scheduler.token"),system:kube-scheduler,system:kube-scheduler"
  } >"$DIR/tokens.csv"
  chmod 600 "$DIR/tokens.csv" "$DIR/admin.token" "$DIR/mirage.token" "$DIR/scheduler.token"
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
kubeconfig scheduler "$DIR/scheduler.token"

# Apply scripts/k8s/rbac/*.json with curl (no kubectl needed); 409 = already there.
api() { # method path [curl args...] -> prints the HTTP status
  local m=$1 p=$2
  shift 2
  curl -sS -o "$DIR/api.out" -w '%{http_code}' --max-time 10 --cacert "$PKI/ca.crt" -X "$m" "$@" \
    "https://127.0.0.1:$PORT$p"
}
admin_api() { # method path [curl args...]
  local m=$1 p=$2
  shift 2
  api "$m" "$p" -H "Authorization: Bearer $(cat "$DIR/admin.token")" -H 'Content-Type: application/json' "$@"
}
for f in "$ROOT"/scripts/k8s/rbac/*.json; do
  case "$(basename "$f")" in
    *-clusterrole.json) path=/apis/rbac.authorization.k8s.io/v1/clusterroles ;;
    *-clusterrolebinding.json) path=/apis/rbac.authorization.k8s.io/v1/clusterrolebindings ;;
    *-priorityclass-*.json) path=/apis/scheduling.k8s.io/v1/priorityclasses ;;
    *) fail "don't know where to create $f" ;;
  esac
  code=$(admin_api POST "$path" --data-binary "@$f") || true
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

# --- 7. controller manager, scheduler, kwok ----------------------------------
# healthz NAME URL: wait until the process answers (or fail).
healthz() {
  local t0=$SECONDS
  until curl -fsSk --max-time 2 "$2" >/dev/null 2>&1; do
    alive "$DIR/$1.pid" || fail "$1 exited"
    [ $((SECONDS - t0)) -ge 60 ] && fail "$1 not healthy after 60 s"
    sleep 0.3
  done
}
KCM_PORT=$(free_port)
log "starting kube-controller-manager (node lifecycle, jobs, garbage collection, namespaces, ...)"
setsid "$KCM" --kubeconfig "$DIR/admin.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
  --leader-elect=false --use-service-account-credentials=false \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-name mirage-test --profiling=false \
  </dev/null >"$DIR/kube-controller-manager.log" 2>&1 &
echo $! >"$DIR/kube-controller-manager.pid"
SCHED_PORT=$(free_port)
log "starting kube-scheduler (as system:kube-scheduler)"
setsid "$SCHED" --kubeconfig "$DIR/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" \
  --leader-elect=false --profiling=false \
  </dev/null >"$DIR/kube-scheduler.log" 2>&1 &
echo $! >"$DIR/kube-scheduler.pid"
KWOK_PORT=$(free_port)
log "starting kwok $KWOK_VERSION for nodes labelled $KWOK_LABEL"
setsid "$KWOK" --kubeconfig "$DIR/admin.kubeconfig" \
  --config "$ROOT/scripts/k8s/kwok/stages.yaml" \
  --manage-nodes-with-label-selector "$KWOK_LABEL" \
  --node-lease-duration-seconds 40 \
  --server-address "127.0.0.1:$KWOK_PORT" \
  </dev/null >"$DIR/kwok.log" 2>&1 &
echo $! >"$DIR/kwok.pid"
healthz kube-controller-manager "https://127.0.0.1:$KCM_PORT/healthz"
healthz kube-scheduler "https://127.0.0.1:$SCHED_PORT/healthz"
healthz kwok "http://127.0.0.1:$KWOK_PORT/healthz"

# --- 8. the whole loop once: a kwok node, a pod the scheduler binds to it -----
probe="mirage-probe-$$"
code=$(admin_api POST /api/v1/nodes --data-binary "{\"metadata\":{\"name\":\"$probe\",\"labels\":{\"${KWOK_LABEL%%=*}\":\"${KWOK_LABEL#*=}\"}}}") || true
[ "$code" = 201 ] || { cat "$DIR/api.out" >&2; fail "creating the probe node: HTTP $code"; }
code=$(admin_api POST /api/v1/namespaces/default/pods --data-binary "{\"metadata\":{\"name\":\"$probe\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"none\"}],
  \"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"$probe\"]}]}]}}}}}") || true
[ "$code" = 201 ] || { cat "$DIR/api.out" >&2; fail "creating the probe pod: HTTP $code"; }
t0=$SECONDS
until admin_api GET "/api/v1/namespaces/default/pods/$probe" >/dev/null && grep -q '"phase": *"Running"' "$DIR/api.out" &&
  grep -q "\"nodeName\": *\"$probe\"" "$DIR/api.out"; do
  [ $((SECONDS - t0)) -ge 60 ] && { cat "$DIR/api.out" >&2; fail "the probe pod was not scheduled and running on the probe node after 60 s"; }
  sleep 0.3
done
log "probe: kwok readied the node, the scheduler bound the pod, kwok ran it ($((SECONDS - t0)) s)"
admin_api DELETE "/api/v1/namespaces/default/pods/$probe" --data-binary '{"gracePeriodSeconds":0}' >/dev/null || true
admin_api DELETE "/api/v1/nodes/$probe" >/dev/null || true
rm -f "$DIR/api.out"

write_env
log "ready: https://127.0.0.1:$PORT (etcd 127.0.0.1:$ETCD_PORT); source $ENV"
