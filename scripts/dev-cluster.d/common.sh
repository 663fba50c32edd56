# shellcheck shell=bash
# Helpers for scripts/dev-cluster: messages, pid records, starting/stopping daemons,
# bounded waits. Sourced, never run.

say() { printf 'dev-cluster: %s\n' "$*"; }
warn() { printf 'dev-cluster: warning: %s\n' "$*" >&2; }
die() {
	printf 'dev-cluster: error: %s\n' "$*" >&2
	exit 1
}

# Millisecond wall clock (bash 5 EPOCHREALTIME), for timings and deadlines.
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	printf '%s' "$((t / 1000))"
}

# --- host packages -------------------------------------------------------------------
# Several `up`s run at once (scripts/test-all brings up every version together), and apt
# refuses or half-reads its package lists while another apt-get rewrites them ("Can't
# find a source to download version ..."). Every host apt-get of dev-cluster goes through
# these, one at a time across the machine.
APT_LOCK=/var/lock/slurmdash-dev-cluster-apt.lock

# Runs `apt-get ARGS` (read-only uses: download, show) holding the host apt lock.
host_apt() {
	flock -w 1200 "$APT_LOCK" env DEBIAN_FRONTEND=noninteractive \
		apt-get -o DPkg::Lock::Timeout=600 "$@" </dev/null
}

# Installs host packages: `apt-get update` then `install`, holding the lock for both (a
# fresh machine has no package lists yet). Keeps apt from starting the system's own
# munge/mariadb/ssh/slurm services (they would take the sockets and ports we use): a
# policy-rc.d that says "no", only for the duration and only if the machine has none.
host_apt_install() {
	(
		exec 8>"$APT_LOCK"
		flock -w 1200 8 || die "another apt-get of dev-cluster held $APT_LOCK for 20 minutes"
		local policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
		if [[ ! -e $policy ]]; then
			printf '#!/bin/sh\n# temporary, from slurmdash scripts/dev-cluster\nexit 101\n' >"$policy"
			chmod 755 "$policy"
			own_policy=1
		fi
		{
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q &&
				DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
					--no-install-recommends -o Dpkg::Options::=--force-confdef \
					-o Dpkg::Options::=--force-confold "$@"
		} </dev/null 8>&- || rc=$?
		((own_policy)) && rm -f "$policy"
		exit "$rc"
	)
}

# --- pid records -------------------------------------------------------------------
# $RUN/<name>.pid holds "PID STARTTIME" (STARTTIME = field 22 of /proc/PID/stat), so a
# recycled pid is never mistaken for ours and never signalled.

pid_file() { printf '%s/%s.pid' "$RUN" "$1"; }
# (slurmd@NODE logs to slurmd-NODE.log: SlurmdLogFile has %n)
log_file() { printf '%s/%s.log' "$LOG" "${1/@/-}"; }
# Where a daemon's stdout/stderr go. Slurm daemons in the foreground (-D) copy every
# log line to stderr, so theirs go to a separate file (it keeps the early fatal errors
# written before the LogFile opens); the others log only there.
stdio_file() {
	case $1 in
	slurm*) printf '%s/%s.stderr' "$LOG" "${1/@/-}" ;;
	*) log_file "$1" ;;
	esac
}

# Prints "STATE STARTTIME" of a pid, or fails if it does not exist.
proc_stat() {
	local stat rest
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	rest=${stat##*) } # the command name may contain spaces and parens
	# shellcheck disable=SC2086 # split the fields on purpose
	set -- $rest
	printf '%s %s' "$1" "${20}"
}

# Prints the pid recorded for a daemon we started, if that process still runs.
# Zombies (Z) and dead (X) processes count as gone: init reaps them lazily.
alive_pid() {
	local f pid start st
	f=$(pid_file "$1")
	[[ -r $f ]] || return 1
	read -r pid start <"$f" || true
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	st=$(proc_stat "$pid") || return 1
	case ${st%% *} in Z | X | x) return 1 ;; esac
	[[ -z $start || ${st#* } == "$start" ]] || return 1
	printf '%s' "$pid"
}

is_alive() { alive_pid "$1" >/dev/null; }

# start_daemon NAME [inroot] CMD...: runs CMD (in the version's chroot after `inroot`) in the foreground of its own session (setsid, no
# fork, so $! is the daemon itself), stdin from /dev/null, stdout+stderr appended to
# stdio_file, the lock fd closed so the daemon never holds our lock. Records the pid.
start_daemon() {
	local name=$1 log st
	shift
	if [[ $1 == inroot ]]; then
		shift
		[[ -z $ROOT ]] || set -- chroot "$ROOT" "$@"
	fi
	log=$(stdio_file "$name")
	printf '\n==== %s: dev-cluster starting %s\n' "$(date '+%F %T')" "$name" >>"$log"
	(cd / && exec setsid "$@" </dev/null >>"$log" 2>&1 9>&- 7>&-) &
	local pid=$!
	st=$(proc_stat "$pid") || st="? "
	printf '%s %s\n' "$pid" "${st#* }" >"$(pid_file "$name")"
}

# stop_daemon NAME [TIMEOUT_S]: SIGTERM the recorded pid, wait, SIGKILL if needed.
stop_daemon() {
	local name=$1 timeout=${2:-15} pid deadline
	if ! pid=$(alive_pid "$name"); then
		rm -f "$(pid_file "$name")"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$(($(now_ms) + timeout * 1000))
	while is_alive "$name"; do
		if (($(now_ms) > deadline)); then
			warn "$name (pid $pid) ignored SIGTERM for ${timeout}s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.2
			break
		fi
		sleep 0.1
	done
	rm -f "$(pid_file "$name")"
	say "stopped $name (pid $pid)"
}

# Error for a daemon that failed: names it, points at its log and shows the tail.
die_daemon() {
	local name=$1 log f files
	shift
	log=$(log_file "$name")
	files=("$log")
	[[ $(stdio_file "$name") == "$log" ]] || files+=("$(stdio_file "$name")")
	{
		printf 'dev-cluster: error: %s: %s\n' "$name" "$*"
		printf 'dev-cluster: see its log: %s\n' "$log"
		for f in "${files[@]}"; do
			[[ -s $f ]] || continue
			printf -- '---- last lines of %s ----\n' "$f"
			tail -n 15 "$f"
			printf -- '----\n'
		done
	} >&2
	exit 1
}

# check_port NAME PORT: fails clearly when something else already listens on PORT
# (before starting NAME, which would otherwise die with "Address already in use").
check_port() {
	local name=$1 port=$2 who
	who=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:(([^)]*' | head -n 1) || true
	[[ -z $who ]] && return 0
	who=${who#users:((}
	die "$name: TCP port $port is already taken by ${who:-another process} (not by this checkout's dev-cluster); stop it or free the port"
}

# wait_ready NAME TIMEOUT_S WHAT CMD...: polls CMD every 0.2 s until it succeeds.
# Fails early, with the log, if the daemon NAME exits meanwhile (NAME "-" skips that).
wait_ready() {
	local name=$1 timeout=$2 what=$3 deadline
	shift 3
	deadline=$(($(now_ms) + timeout * 1000))
	until "$@" >/dev/null 2>&1; do
		if [[ $name != - ]] && ! is_alive "$name"; then
			die_daemon "$name" "exited while starting (waiting for: $what)"
		fi
		if (($(now_ms) > deadline)); then
			die_daemon "$name" "not ready after ${timeout}s (waiting for: $what)"
		fi
		sleep 0.2
	done
}

# write_file PATH MODE < content: writes only when the content differs, so unchanged
# configs keep their mtime and daemons need no restart. Returns 0 if it wrote.
write_file() {
	local path=$1 mode=$2 tmp
	tmp=$(mktemp "$path.XXXXXX")
	cat >"$tmp"
	chmod "$mode" "$tmp"
	if [[ -f $path ]] && cmp -s "$tmp" "$path"; then
		rm -f "$tmp"
		chmod "$mode" "$path"
		return 1
	fi
	mv -f "$tmp" "$path"
	return 0
}
