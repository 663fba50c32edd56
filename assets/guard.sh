#!/bin/sh
# slurmdash retry guard. Staged unchanged into every guarded launch's job directory as
# sbatch/guard.sh; it reads data files only (meta/guard.conf, meta/triage-*.ere,
# meta/webhook.url) and never sources or evaluates their contents.
#
#   guard.sh arm JOB_DIR ATTEMPT_ID N SHA256 GUARD_SHA256 RESUMES POLICY_SHA256 [EXCLUDED]
#       queue the guard of attempt N (Slurm job ATTEMPT_ID): a 1-CPU job that waits with
#       --dependency=afternotok:ATTEMPT_ID and is removed by Slurm when the attempt succeeds.
#       Prints `slurmdash-guard GUARD_ID`.
#   guard.sh run JOB_DIR ATTEMPT_ID N SHA256 GUARD_SHA256 RESUMES POLICY_SHA256 [EXCLUDED]
#       (the guard job itself, after the attempt failed) classify the attempt as slurmdash
#       does; on ERR_INFRA with attempts left resubmit the staged script and arm the next
#       guard; after a TIMEOUT, PREEMPTED or NODE_FAIL that guard.conf's `resume` names,
#       with fewer than `max_resumes` RESUMES so far (0 when absent), resume it the same
#       way with SLURMDASH_RESUME_ATTEMPT set to the resume's number. Every decision is one
#       JSON line in meta/chain.jsonl. After an infrastructure failure (not a preemption)
#       the new attempt is submitted with --exclude= the nodes the failed one ran on, merged
#       with the script's own --exclude and EXCLUDED (the nodes earlier retries left out,
#       `-` for none), which the next guard carries on.
#
# An adopted job (`slurmdash adopt`: submitted elsewhere, its script Slurm's own copy) has
# its sbatch options as `opt=` lines of meta/guard.conf, each one argument given to every
# resubmission, and the nodes it was kept off as `exclude=`; both are pinned with the policy.
#
# What it queues is never re-read from the job directory unchecked: the next guard is
# this very script ($0: the checked copy the submission ran, or Slurm's own copy of the
# guard job's script), refused unless its sha256 is GUARD_SHA256; the attempt is a private
# copy of the staged script whose sha256 must be SHA256, given to sbatch on stdin.
#
# The policy is pinned the same way as the resume count, on the guard job's command line
# (which the job cannot change): POLICY_SHA256 is the sha256 of the sha256sum lines of
# meta/guard.conf, meta/triage-oom.ere and meta/triage-infra.ere as slurmdash staged them.
# The guard reads private copies of those three files and acts only when they still hash
# to POLICY_SHA256: a job that rewrites its limit, max_resumes, resume classes or triage
# patterns gets no retry or resume at all, never more. Every count is digits only, at
# most 9 of them, before any arithmetic sees it.
set -u
mode=${1-}
dir=${2-}
attempt=${3-}
n=${4-}
sum=${5-}
gsum=${6-}
resumes=${7-}
psum=${8-}
excl=${9--}
case $mode in arm|run) ;; *) echo "usage: guard.sh arm|run JOB_DIR ATTEMPT N SHA256 GUARD_SHA256 RESUMES POLICY_SHA256" >&2; exit 2 ;; esac
case $attempt in ''|*[!0-9_]*) echo "guard.sh: bad attempt id '$attempt'" >&2; exit 2 ;; esac
chain=$dir/meta/chain.jsonl
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sdguard.XXXXXX") || { echo "guard.sh: cannot make a private temporary directory" >&2; exit 2; }
trap 'rm -rf -- "$tmp"' EXIT
name= partition= account= limit=1 script= local_id= resume= max_resumes=0 cexcl=

now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# JSON string body: backslashes and quotes escaped, control characters dropped.
js() { printf '%s' "$1" | tr -d '\000-\010\012-\037' | tr '\011' ' ' | sed 's/\\/\\\\/g; s/"/\\"/g'; }

record() { # line (a JSON object): append to chain.jsonl
  ( umask 077; printf '%s\n' "$1" >> "$chain" )
}

# Posts one decision to the webhook, when the launch has one. Never fails the guard.
# meta/webhook.url is data: one URL of URL characters only, handed to curl on its stdin.
notify() { # job state class evidence decision
  [ -r "$dir/meta/webhook.url" ] || return 0
  command -v curl >/dev/null 2>&1 || { echo "guard: no curl for the webhook" >&2; return 0; }
  url=$(head -n 1 "$dir/meta/webhook.url")
  case $url in http://*|https://*) ;; *) echo "guard: meta/webhook.url holds no http(s) URL (ignored)" >&2; return 0 ;; esac
  if [ -n "$(printf '%s' "$url" | tr -d "A-Za-z0-9._~:/?#@!\$&'()*+,;=%[]-")" ]; then
    echo "guard: meta/webhook.url holds characters a URL cannot (ignored)" >&2; return 0
  fi
  text="slurmdash: $name (launch $local_id) attempt $n, job $1: $5"
  [ -n "$3" ] && text="$text ($3: $4)"
  body=$(printf '{"text":"%s","launch":"%s","name":"%s","job":"%s","attempt":%s,"state":"%s","class":"%s","evidence":"%s","decision":"%s"}' \
    "$(js "$text")" "$(js "$local_id")" "$(js "$name")" "$1" "$n" "$(js "$2")" "$(js "$3")" "$(js "$4")" "$(js "$5")")
  printf '%s' "$body" > "$tmp/body"
  printf 'url = "%s"\n' "$url" | curl -sS -m 20 -o /dev/null -K - \
    -H 'Content-Type: application/json' --data-binary @"$tmp/body" >/dev/null 2>&1 \
    || echo "guard: the webhook did not answer (ignored)" >&2
  return 0
}

decide() { # state class evidence decision [next]
  next=${5-}
  record "$(printf '{"time":"%s","event":"decision","job":"%s","attempt":%s,"state":"%s","class":"%s","evidence":"%s","decision":"%s"%s}' \
    "$(now)" "$attempt" "$n" "$(js "$1")" "$(js "$2")" "$(js "$3")" "$(js "$4")" "${next:+,\"next\":\"$next\"}")"
  echo "guard: attempt $n (job $attempt): $4"
  notify "$attempt" "$1" "$2" "$3" "$4"
}

# Gives up on this attempt: says why on stderr and, when this is the guard job itself, in
# the chain (what the dashboard shows). Never retries or resumes.
refuse() { # why
  echo "guard.sh: $1" >&2
  if [ "$mode" = run ]; then
    decide "UNKNOWN" "" "" "not retried or resumed: $1"
  fi
  exit 2
}

# A count: digits only and at most 9 of them (sh's integers hold it; a longer one such as
# 99999999999999999999 would wrap past 2^63 and pass every limit check).
count() { # what value
  case $2 in ''|*[!0-9]*) ;; *) [ "${#2}" -le 9 ] && return 0 ;; esac
  refuse "$1 '$(printf '%s' "$2" | tr -d '\000-\037' | cut -c1-40)' is not a whole number of at most 9 digits"
}

# A Slurm host list (`gpu[01-02],cpu01`), as data: only the characters one may hold.
hostlist() { [ -n "$1" ] && [ -z "$(printf '%s' "$1" | tr -d 'A-Za-z0-9_.,[]-')" ]; }
[ "$excl" = - ] || hostlist "$excl" || refuse "excluded nodes '$(printf '%s' "$excl" | tr -d '\000-\037' | cut -c1-80)' are not a Slurm host list"
count "attempt number" "$n"
count "resume count" "$resumes"
case $psum in
  ''|*[!0-9a-f]*) refuse "no pinned sha256 of the guard's policy (meta/guard.conf and the triage patterns) on its command line" ;;
esac
# Private copies, hashed and then read: what is checked is what is used.
pol=
for f in guard.conf triage-oom.ere triage-infra.ere; do
  cp -- "$dir/meta/$f" "$tmp/$f" 2>/dev/null || refuse "cannot read $dir/meta/$f"
  pol="$pol$(sha256sum < "$tmp/$f")
"
done
now_psum=$(printf '%s' "$pol" | sha256sum)
now_psum=${now_psum%% *}
if [ "$now_psum" != "$psum" ]; then
  refuse "meta/guard.conf or meta/triage-*.ere changed since the launch (policy sha256 $now_psum, pinned $psum): the guard keeps to what was launched and does nothing"
fi
while IFS= read -r line || [ -n "$line" ]; do
  k=${line%%=*}
  v=${line#*=}
  case $k in
    name) name=$v ;;
    partition) partition=$v ;;
    account) account=$v ;;
    limit) limit=$v ;;
    script) script=$v ;;
    local_id) local_id=$v ;;
    resume) resume=$v ;;
    max_resumes) max_resumes=$v ;;
    exclude) cexcl=$v ;;
  esac
done < "$tmp/guard.conf"
count "limit in meta/guard.conf" "$limit"
count "max_resumes in meta/guard.conf" "$max_resumes"

# Queues the guard of attempt $2 (number $3, after $5 resumes); prints its id. The guard
# queued is this script itself, checked against GUARD_SHA256 first.
arm_guard() { # dir attempt n sum resumes
  me=$(sha256sum < "$0") || me=
  if [ -z "$gsum" ] || [ "${me%% *}" != "$gsum" ]; then
    echo "guard.sh: $0 is not the guard that was launched (sha256 ${me%% *}, expected ${gsum:-none}): no guard queued" >&2
    return 1
  fi
  g=$(sbatch --parsable --job-name="sdguard-$name" ${partition:+"--partition=$partition"} \
      ${account:+"--account=$account"} --nodes=1 --ntasks=1 --cpus-per-task=1 --mem=100M \
      --time=10:00 --no-requeue --mail-type=NONE \
      --dependency="afternotok:$2" --kill-on-invalid-dep=yes \
      --chdir="$1" --output="$1/meta/guard-%j.log" --export=ALL \
      "$0" run "$1" "$2" "$3" "$4" "$gsum" "$5" "$psum" "$excl") || return 1
  g=${g%%;*}
  case $g in ''|*[!0-9]*) echo "guard.sh: sbatch printed '$g'" >&2; return 1 ;; esac
  record "$(printf '{"time":"%s","event":"armed","job":"%s","attempt":%s,"guard":"%s"}' "$(now)" "$2" "$3" "$g")"
  echo "$g"
}

if [ "$mode" = arm ]; then
  g=$(arm_guard "$dir" "$attempt" "$n" "$sum" "$resumes") || exit 1
  echo "slurmdash-guard $g"
  exit 0
fi

# ---- run: the attempt ended in a failed state (or Slurm could not tell) ----

# What sacct knows of the attempt, once final: STATE|REASON|EXIT (waits up to ~3 min for
# accounting to catch up).
live_state() { squeue --noheader --jobs="$attempt" --format='%T' 2>/dev/null | head -n 1; }
rec=
i=0
# FAILED with exit code 0:0 is how slurmdbd may show a failed job for a moment before its
# exit code arrives: read again a few times before taking it as it is.
settle=0
while [ "$i" -lt 60 ]; do
  # Slurm requeued the attempt (it runs again under the same id): it keeps a guard.
  case $(live_state) in
    PENDING|RUNNING|CONFIGURING|SUSPENDED|REQUEUED|REQUEUE_HOLD)
      if g=$(arm_guard "$dir" "$attempt" "$n" "$sum" "$resumes"); then
        echo "guard: job $attempt was requeued by Slurm; guard $g waits for it"
        exit 0
      fi ;;
  esac
  rec=$(sacct -X --noheader --parsable2 --jobs="$attempt" --format=State,Reason,ExitCode,NodeList 2>/dev/null | tail -n 1)
  st=${rec%%|*}
  st=${st%% *}
  case $st in
    PENDING|RUNNING|REQUEUED|SUSPENDED|COMPLETING|CONFIGURING|RESIZING|REQUEUE_HOLD|REQUEUE_FED|'') ;;
    FAILED)
      x=${rec#*|}; x=${x#*|}; x=${x%%|*}
      if [ "$x" = "0:0" ] && [ "$settle" -lt 5 ]; then settle=$((settle + 1)); else break; fi ;;
    *) break ;;
  esac
  i=$((i + 1))
  sleep 3
done
state=${rec%%|*}
state=${state%% *}
rest=${rec#*|}
reason=${rest%%|*}
rest=${rest#*|}
exitcode=${rest%%|*}
case $rest in *'|'*) nodes=${rest#*|} ;; *) nodes= ;; esac
hostlist "$nodes" || nodes=
code=${exitcode%%:*}
sig=${exitcode#*:}

log_dir=$dir/slurm-logs/$name-$attempt
# The last line of main.err, then main.out (their last 64 KiB), matching one of the EREs.
match() { # ere-file
  [ -s "$1" ] || return 1
  for f in "$log_dir/main.err" "$log_dir/main.out"; do
    [ -r "$f" ] || continue
    l=$(tail -c 65536 "$f" | tr '\r' '\n' | grep -E -i -f "$1" 2>/dev/null | tail -n 1)
    if [ -n "$l" ]; then
      l=$(printf '%s' "$l" | tr -d '\000-\010\013-\037' | tr '\011' ' ' | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' | cut -c1-200)
      printf '%s: %s' "${f##*/}" "$l"
      return 0
    fi
  done
  return 1
}

class= evidence=
case $state in
  COMPLETED) class=COMPLETE; evidence="state COMPLETED" ;;
  NODE_FAIL|BOOT_FAIL|PREEMPTED) class=ERR_INFRA; evidence="state $state" ;;
  OUT_OF_MEMORY) class=ERR_OOM; evidence="state $state" ;;
  TIMEOUT|DEADLINE) class=ERR_TIMEOUT; evidence="state $state" ;;
  CANCELLED|REVOKED) class=ERR_CANCELLED; evidence="state $state" ;;
  FAILED)
    case $reason in
      NodeDown|Prolog|SystemFailure|JobLaunchFailure) class=ERR_INFRA; evidence="reason $reason" ;;
    esac
    # OOM before infra: a rank killed for memory makes its peers print NCCL network errors.
    if [ -z "$class" ] && l=$(match "$tmp/triage-oom.ere"); then class=ERR_OOM; evidence=$l; fi
    if [ -z "$class" ] && l=$(match "$tmp/triage-infra.ere"); then class=ERR_INFRA; evidence=$l; fi
    if [ -z "$class" ]; then
      class=ERR_PROGRAM
      if [ "${sig:-0}" != 0 ] && [ "${code:-0}" = 0 ]; then evidence="exit code $code, signal $sig"
      else evidence="exit code ${code:-?}"; fi
    fi ;;
  '') decide "UNKNOWN" "" "sacct has no final record of job $attempt" "not retried: no final state in sacct"; exit 0 ;;
  *) class=ERR_PROGRAM; evidence="state $state" ;;
esac

if [ "$class" = ERR_CANCELLED ]; then
  decide "$state" "$class" "$evidence" "cancelled"; exit 0
fi
# Auto-resume: the end states guard.conf's `resume` names go on as the same launch (the
# program picks up its checkpoint), counted apart from the retries.
case $state in
  TIMEOUT) on=timeout ;;
  PREEMPTED) on=preempt ;;
  NODE_FAIL) on=node_fail ;;
  *) on= ;;
esac
how=retried
if [ -n "$on" ]; then
  case ",$resume," in
    *",$on,"*)
      if [ "$resumes" -ge "$max_resumes" ]; then
        decide "$state" "$class" "$evidence" "not resumed: resume limit reached ($resumes of max_resumes $max_resumes)"; exit 0
      fi
      resumes=$((resumes + 1))
      how="resumed after $state"
      SLURMDASH_RESUME_ATTEMPT=$resumes
      export SLURMDASH_RESUME_ATTEMPT ;;
  esac
fi
if [ "$how" = retried ]; then
  if [ "$class" != ERR_INFRA ]; then
    decide "$state" "$class" "$evidence" "not retried: $class ($evidence)"; exit 0
  fi
  # (attempts that were resumes do not count against the retries)
  if [ $((n - resumes)) -ge "$limit" ]; then
    decide "$state" "$class" "$evidence" "limit reached"; exit 0
  fi
fi
note=
[ "$how" = retried ] || note=" (resume $resumes of $max_resumes)"

# ---- resubmit the staged script, as the launch did ----
# sbatch reads a private copy, the very bytes checked here.
now_sum=
cp -- "$script" "$tmp/job.sbatch" 2>/dev/null && now_sum=$(sha256sum < "$tmp/job.sbatch")
now_sum=${now_sum%% *}
if [ -z "$now_sum" ] || [ "$now_sum" != "$sum" ]; then
  decide "$state" "$class" "$evidence" "not ${how%% *}: $script changed since it was launched (sha256 ${now_sum:-unreadable}, recorded $sum)"
  exit 0
fi
# The new attempt gets the environment of the launch, not this guard's allocation; the
# site's own setting of where Slurm is (SLURM_CONF, from the login environment) stays.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(SBATCH_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(SRUN_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(SALLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do
  [ "$v" = SLURM_CONF ] || unset "$v"
done
live() {
  q=$(squeue --me --noheader --format='%i|%T|%Z|%j|%o') || return 1
  printf '%s\n' "$q" | while IFS='|' read -r i st wd jn cmd; do
    [ "$cmd" = "$script" ] || { [ "$wd" = "$dir" ] && [ "$jn" = "$name" ]; } || continue
    case $st in COMPLETED|COMPLETING|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|SPECIAL_EXIT) ;; *) echo "$i" ;; esac
  done
}
next=$((n + 1))
found=$(live) || found=
id=${found%%[!0-9]*}
if [ -n "$id" ]; then
  mkdir -p "$log_dir/../$name-$id"
  g=$(arm_guard "$dir" "$id" "$next" "$sum" "$resumes") || g=
  decide "$state" "$class" "$evidence" "$how as $id (already queued)$note" "$id"
  exit 0
fi
# An adopted job's own options, one argument each (none for a launch).
set --
while IFS= read -r line || [ -n "$line" ]; do
  case $line in opt=*) set -- "$@" "${line#opt=}" ;; esac
done < "$tmp/guard.conf"
hostlist "$cexcl" || cexcl=
# After an infrastructure failure, not on the nodes it failed on (a preemption is no
# fault of the node): --exclude on the command line replaces the script's own, so the
# script's (or an adopted job's), the earlier retries' and these are merged.
if [ "$class" = ERR_INFRA ] && [ "$state" != PREEMPTED ] && [ -n "$nodes" ]; then
  own=$(sed -n -e 's/^#SBATCH[[:space:]][[:space:]]*--exclude[= ][[:space:]]*\([^[:space:]]*\).*/\1/p' \
    -e 's/^#SBATCH[[:space:]][[:space:]]*-x[[:space:]]*\([^[:space:]]*\).*/\1/p' "$tmp/job.sbatch" | tr '\n' ',')
  own=${own%,}
  hostlist "$own" || own=
  [ -n "$cexcl" ] && own=$cexcl${own:+,$own}
  [ "$excl" = - ] && excl=$nodes || excl=$excl,$nodes
  set -- "$@" "--exclude=$excl${own:+,$own}"
  note="$note, not on $nodes where it failed (--exclude=$excl${own:+,$own})"
  # Kept off every node that could run it, the attempt would wait forever (BadConstraints):
  # the scheduler's own check says so first, and then the chain ends here.
  t=$(cd -- "$dir" && sbatch --test-only "$@" < "$tmp/job.sbatch" 2>&1) || case $t in
    *"node configuration is not available"*)
      decide "$state" "$class" "$evidence" "not ${how%% *}: no node is left to run it once $excl, where attempts failed, is left out (sbatch --test-only: $(printf '%s' "$t" | tr '\n' ' ' | cut -c1-200))"; exit 0 ;;
  esac
elif [ -n "$cexcl" ]; then
  set -- "$@" "--exclude=$cexcl"
fi
# sbatch's own words when it refuses (its warnings, on success, come before the id line).
out=$(cd -- "$dir" && sbatch --parsable --hold --export=ALL "$@" < "$tmp/job.sbatch" 2>&1) || {
  decide "$state" "$class" "$evidence" "not ${how%% *}: sbatch refused the new attempt: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"; exit 0; }
out=$(printf '%s\n' "$out" | tail -n 1)
id=${out%%;*}
case $id in ''|*[!0-9]*) decide "$state" "$class" "$evidence" "not ${how%% *}: sbatch printed '$out'"; exit 0 ;; esac
if ! mkdir -p "$dir/slurm-logs/$name-$id"; then
  scancel "$id"
  decide "$state" "$class" "$evidence" "not ${how%% *}: cannot create the log directory"; exit 0
fi
g=$(arm_guard "$dir" "$id" "$next" "$sum" "$resumes") || echo "guard: could not arm a guard for job $id" >&2
if ! scontrol release "$id"; then
  scancel "$id"
  [ -n "${g-}" ] && scancel "$g"
  decide "$state" "$class" "$evidence" "not ${how%% *}: Slurm would not release job $id"; exit 0
fi
decide "$state" "$class" "$evidence" "$how as $id$note" "$id"
