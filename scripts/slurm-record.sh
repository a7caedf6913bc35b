#!/usr/bin/env bash
# Record the command outputs the slurm package's parser tests read, from the
# loopback cluster (scripts/slurm-up.sh), into slurm/testdata/*-MAJOR.MINOR.*
#
#   scripts/slurm-record.sh [RELEASE] [OUTDIR]
#
# RELEASE (e.g. 24.11, 25.05) records from that release's cluster
# (scripts/slurm-newer/up.sh RELEASE, under $MIRAGE_TEST_DIR/slurm-RELEASE)
# instead of the 22.05 one; MIRAGE_SLURM_STATE=DIR names any other.
#
# It submits a fixed set of jobs (running GPU jobs, a dependency, a job
# waiting for resources, a held job, an array, COMPLETED/FAILED/CANCELLED and
# TIMEOUT jobs), waits until the TIMEOUT job has been killed at its limit
# (60-95 s on 22.05), then records squeue/sinfo/scontrol/sacct outputs in one
# go; then sbatch rejections; then what the commands print with slurmctld,
# slurmdbd and munged stopped (each restarted right after). Job files go to a
# temporary directory. It needs the cluster to itself (an empty queue) and
# takes about two minutes. The tests' expectations were written from these
# files by hand: re-recording changes ids and times, so update the tests too.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ "${1:-}" =~ ^[0-9]+\.[0-9]+$ ]]; then
  export MIRAGE_SLURM_STATE="${MIRAGE_TEST_DIR:-/tmp/mirage-test}/slurm-$1"
  [ -f "$MIRAGE_SLURM_STATE/cluster.env" ] || { echo "no Slurm $1 cluster at $MIRAGE_SLURM_STATE: run scripts/slurm-newer/up.sh $1" >&2; exit 1; }
  shift
fi
. "$HERE/slurm/lib.sh"
OUT="${1:-$HERE/../slurm/testdata}"
mkdir -p "$OUT"
export TZ=UTC SLURM_TIME_FORMAT=standard
unset SQUEUE_FORMAT SQUEUE_FORMAT2 SACCT_FORMAT SINFO_FORMAT

slurmctld_ok >/dev/null 2>&1 || die "cluster not up: run scripts/slurm-up.sh"
[ -z "$(squeue -h -o %i)" ] || die "jobs are pending or running: the recording needs the cluster to itself"
if [ -n "$(squeue -h -t all -o %i)" ]; then
  log "waiting for slurmctld to forget finished jobs (MinJobAge, at most 5 minutes) so only this recording's jobs show"
  for i in $(seq 1 400); do [ -z "$(squeue -h -t all -o %i)" ] && break; sleep 1; done
  [ -z "$(squeue -h -t all -o %i)" ] || die "finished jobs still listed by squeue -t all"
fi
VER="$(sinfo --version | awk '{print $2}' | cut -d. -f1,2)"
WORK="$(mktemp -d /tmp/mirage-record.XXXXXX)"
cd "$WORK" # so nothing a job writes relative to its submit directory lands in the repository
cleanup() {
  set +e
  [ -s "$WORK/ids" ] && scancel $(cat "$WORK/ids") 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

cat > "$WORK/sleeper.sh" <<'EOF'
#!/bin/bash
trap 'echo "got USR1" >> "$PWD/signal-$SLURM_JOB_ID.txt"' USR1
touch "$PWD/ready-$SLURM_JOB_ID"
for i in $(seq 1 3600); do sleep 1; done
EOF
chmod +x "$WORK/sleeper.sh"

sub() { # sbatch args...: prints and remembers the job id
  local id
  id="$(sbatch --parsable --chdir="$WORK" --output="$WORK/%x-%j.out" "$@")"
  id="${id%%;*}"
  echo "$id" >> "$WORK/ids" # sub runs in a subshell: remember ids in a file
  echo "$id"
}
state() { squeue -h -j "$1" -t all -o %T 2>/dev/null || true; }
wait_state() { # id state timeout_s
  local i
  for i in $(seq 1 $(( $3 * 5 ))); do
    [ "$(state "$1")" = "$2" ] && return 0
    sleep 0.2
  done
  die "job $1 not $2 after $3 s (now: $(state "$1"))"
}

log "recording Slurm $VER outputs into $OUT"
TO="$(sub -J timeout -A teama -p debug -t 1 "$WORK/sleeper.sh")"
GPU="$(sub -J 'train $(touch pwned) `id`; "q" '"'"'s' --comment 'mirage:c-rec/0.0 note; $(touch pwned2)' \
  -A teama -p debug -t 3 -N 1 --gres=gpu:2 "$WORK/sleeper.sh")"
MULTI="$(sub -J multi -A teamb -p long -t 30 -N 2 --gpus=tesla:6 "$WORK/sleeper.sh")"
DEP="$(sub -J dep -A teama -p debug -t 2 --dependency=afterany:"$GPU" "$WORK/sleeper.sh")"
BIG="$(sub -J big -A teamb -p debug -t 5 -N 4 --gres=gpu:4 "$WORK/sleeper.sh")"
ARR="$(sub -J arr -A teama -p debug -t 3 --array=0-3%1 --gres=gpu:1 --wrap 'sleep 300')"
HELD="$(sub -J held -A teama -p debug -t 1 --hold "$WORK/sleeper.sh")"
FAIL="$(sub -J fail -A teama -p debug -t 1 --wrap 'exit 3')"
OK="$(sub -J ok -A teamb -p debug -t 1 --comment 'mirage:c-rec/1.2' --wrap 'true')"
CAN="$(sub -J cancelled -A teama -p debug -t 1 "$WORK/sleeper.sh")"
# Waits for resources (eligible, never started), then is cancelled: no start time.
PCAN="$(sub -J pending-cancelled -A teama -p debug -t 1 -N 4 --gres=gpu:4 "$WORK/sleeper.sh")"
wait_state "$GPU" RUNNING 20
wait_state "$CAN" RUNNING 20
scancel "$CAN"
wait_state "$PCAN" PENDING 20
scancel "$PCAN"
# Signal only once the script has set its trap (before that, USR1 kills it).
for i in $(seq 1 100); do [ -f "$WORK/ready-$GPU" ] && break; sleep 0.2; done
scancel --signal=USR1 --full "$GPU"
log "jobs: timeout=$TO gpu=$GPU multi=$MULTI dep=$DEP big=$BIG array=$ARR held=$HELD fail=$FAIL ok=$OK cancelled=$CAN pending-cancelled=$PCAN"
log "waiting for job $TO to be killed at its 1-minute limit"
wait_state "$TO" TIMEOUT 150
sleep 6 # one backfill pass (bf_interval=5) for the start estimates

# What the Client runs: from 23.02 on a bare `squeue --json` leaves out the
# jobs that ended (still within MinJobAge); --all --states=all keeps them.
squeue --json --all --states=all > "$OUT/squeue-$VER.json"
squeue --noheader --all --states=all -O "$(
  f=(JobArrayID Name UserName Account Partition QOS State Reason SubmitTime EligibleTime StartTime EndTime TimeLimit
     NumNodes tres-per-node tres-per-job tres-alloc PriorityLong NodeList Dependency Comment)
  s=""; for x in "${f[@]}"; do s+="$x:0"$'\x1f'","; done; echo "${s%$'\x1f',}"
)" > "$OUT/squeue-$VER.txt"
squeue --start --noheader -o "%i"$'\x1f'"%S"$'\x1f'"%r" > "$OUT/squeue-start-$VER.txt"
scontrol show job -o > "$OUT/scontrol-job-$VER.txt"
sinfo -N --json > "$OUT/sinfo-$VER.json"
sinfo --noheader --Node --all -O "NodeList:0"$'\x1f'",StateLong:0"$'\x1f'",CPUsState:0"$'\x1f'",Gres:0"$'\x1f'",GresUsed:0"$'\x1f'",Partition:0" \
  > "$OUT/sinfo-nodes-$VER.txt"
sinfo --noheader --all -o "%P"$'\x1f'"%a"$'\x1f'"%l"$'\x1f'"%L"$'\x1f'"%N"$'\x1f'"%G" > "$OUT/sinfo-partitions-$VER.txt"
S="$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%S)"; E="$(date -u -d '+1 minute' +%Y-%m-%dT%H:%M:%S)"
sacct --allocations --allusers -S "$S" -E "$E" -j "$(paste -sd, "$WORK/ids")" --json > "$OUT/sacct-$VER.json"
sacct --allocations --allusers -S "$S" -E "$E" -j "$(paste -sd, "$WORK/ids")" --parsable2 --noheader --delimiter=$'\x1f' \
  -o JobID,JobName,User,Account,Partition,QOS,State,Reason,Submit,Eligible,Start,End,Timelimit,NNodes,AllocTRES,ReqTRES,Priority,NodeList,ExitCode,Comment \
  > "$OUT/sacct-$VER.txt"
# The same moment in every older JSON schema this release still writes
# (--json=v0.0.NN; 23.11 on): the parsers read each as the same jobs.
for schema in v0.0.40 v0.0.41 v0.0.42 v0.0.43 v0.0.44; do
  [ "$(printf '%s\n' "$VER" 23.11 | sort -V | head -1)" = 23.11 ] || break
  squeue --json="$schema" --all --states=all > "$OUT/squeue-$VER-$schema.json" 2>/dev/null \
    && sinfo -N --json="$schema" > "$OUT/sinfo-$VER-$schema.json" 2>/dev/null \
    && sacct --allocations --allusers -S "$S" -E "$E" -j "$(paste -sd, "$WORK/ids")" --json="$schema" > "$OUT/sacct-$VER-$schema.json" 2>/dev/null \
    || rm -f "$OUT/squeue-$VER-$schema.json" "$OUT/sinfo-$VER-$schema.json" "$OUT/sacct-$VER-$schema.json"
done
[ -s "$WORK/signal-$GPU.txt" ] || die "job $GPU did not record USR1"
sinfo --version > "$OUT/version-$VER.txt"

# Rejections: sbatch's stderr, one file per case.
reject() { # name args...
  local name="$1"; shift
  if sbatch --parsable --chdir="$WORK" --output="$WORK/%j.out" "$@" --wrap true >/dev/null 2>"$OUT/sbatch-$name-$VER.txt"; then
    die "sbatch $* was accepted, expected a rejection"
  fi
}
reject reject-time -p debug -t 10
reject reject-account -A nosuchaccount
reject reject-gpus --gres=gpu:5
reject reject-partition -p nosuchpartition

# Failures of the services: what the commands print (stderr), then restart.
fail_outputs() { # name (22.05's squeue/sinfo --json exit 0 with an "errors" list: keep stdout too)
  squeue --json --all --states=all >"$OUT/fail-$1-squeue-$VER.json" 2>"$OUT/fail-$1-squeue-$VER.txt" || true
  sinfo -N --json >"$OUT/fail-$1-sinfo-$VER.json" 2>/dev/null || true
  sbatch --parsable --chdir="$WORK" --output="$WORK/%j.out" --wrap true >/dev/null 2>"$OUT/fail-$1-sbatch-$VER.txt" || true
  sacct -X -S "$S" -E "$E" --json >/dev/null 2>"$OUT/fail-$1-sacct-$VER.txt" || true
}
"$HERE/slurm-ctl.sh" stop slurmdbd
sacct -X -S "$S" -E "$E" --json >/dev/null 2>"$OUT/fail-slurmdbd-sacct-$VER.txt" || true
"$HERE/slurm-ctl.sh" start slurmdbd
"$HERE/slurm-ctl.sh" stop slurmctld
fail_outputs slurmctld
"$HERE/slurm-ctl.sh" start slurmctld
"$HERE/slurm-ctl.sh" stop munged
fail_outputs munged
"$HERE/slurm-ctl.sh" start munged
wait_for 30 slurmctld slurmctld_ok
log "recorded: $(cd "$OUT" && ls -- *"-$VER".* *"-$VER"-v*.json 2>/dev/null | tr '\n' ' ')"
