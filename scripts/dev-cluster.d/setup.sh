# shellcheck shell=bash
# Everything `up` prepares before starting daemons: packages, users, directories, keys,
# fake GPUs and config files. Each step is idempotent and cheap when already done.
# Sourced by scripts/dev-cluster, never run.

PACKAGES=(slurm-wlm slurmdbd munge mariadb-server mariadb-client openssh-server
	openssh-client tmux iproute2 procps)

ensure_packages() {
	local p missing=()
	for p in "${PACKAGES[@]}"; do
		dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	say "installing missing packages: ${missing[*]}"
	# Keep apt from starting the system's own munge/mariadb/ssh/slurm services (they
	# would take the sockets and ports we use): a policy-rc.d that says "no", only for
	# the duration of the install and only if the machine has none.
	local policy=/usr/sbin/policy-rc.d own_policy=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# temporary, from slurmdash scripts/dev-cluster\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		own_policy=1
	fi
	local rc=0
	{
		DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
				-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
				"${missing[@]}"
	} </dev/null || rc=$?
	((own_policy)) && rm -f "$policy"
	((rc == 0)) || die "apt-get failed (exit $rc) installing: ${missing[*]}"
}

# True if every directory on the way to $1 lets any user through (o+x).
traversable_by_all() {
	local p=$1
	while [[ -n $p && $p != / ]]; do
		if [[ -e $p ]] && (($(stat -c '%a' "$p" | tail -c 2) % 2 == 0)); then
			return 1
		fi
		p=$(dirname "$p")
	done
}

# SlurmdSpoolDir lives in .dev-cluster unless the repo sits under a directory that job
# users cannot traverse (a 0700 home): then batch scripts there fail with "execve():
# Permission denied", so it moves to /var/spool/slurmdash-dev/slurmd.
choose_spool_dir() {
	SPOOL_DIR=$DC/state/slurmd
	if ! traversable_by_all "$REPO"; then
		SPOOL_DIR=/var/spool/slurmdash-dev/slurmd
		say "note: $REPO is not traversable by other users; SlurmdSpoolDir is $SPOOL_DIR"
	fi
}

ensure_dirs() {
	choose_spool_dir
	mkdir -p "$DC"
	chmod 755 "$DC"
	mkdir -p "$RUN" "$LOG" "$DC/state/slurmctld" "$DC/state/munge" \
		"$DC/secrets" "$DC/dev" "$DC/sshd" "$SSH_DIR" "$SPOOL_DIR"
	chmod 700 "$DC/secrets" "$DC/sshd" "$DC/state/munge" "$DC/state/slurmctld"
	# slurmstepd execs the batch script from SlurmdSpoolDir as the job's user.
	chmod 755 "$DC/state" "$SPOOL_DIR"
	mkdir -p /run/munge /run/sshd
	chmod 755 /run/munge /run/sshd
	# The unix socket path of mariadbd must fit in sun_path (108 bytes).
	((${#DB_SOCKET} < 100)) ||
		die "repo path too long for a unix socket ($DB_SOCKET); move the repo to a shorter path"
}

# Test users: sshd (without PAM) refuses a '!'-locked account even for key logins, so
# the password field is '*' (no password login possible, account not locked).
ensure_users() {
	local u pw
	for u in "${TEST_USERS[@]}"; do
		if ! id -u "$u" >/dev/null 2>&1; then
			useradd -m -s /bin/bash -p '*' "$u"
			say "created user $u"
		fi
		pw=$(getent shadow "$u" | cut -d: -f2)
		[[ $pw == '*' ]] || usermod -p '*' "$u"
		[[ $(getent passwd "$u" | cut -d: -f7) == /bin/bash ]] || usermod -s /bin/bash "$u"
		# Scratch tree convention of the real clusters: /lustre/fsw/<user>/results.
		install -d -m 755 /lustre /lustre/fsw
		install -d -m 755 -o "$u" -g "$(id -gn "$u")" "/lustre/fsw/$u" "/lustre/fsw/$u/results"
	done
}

ensure_secrets() {
	[[ -s $DC/secrets/munge.key ]] || mungekey --create --keyfile="$DC/secrets/munge.key"
	chmod 600 "$DC/secrets/munge.key"
	if [[ ! -s $DC/secrets/db_password ]]; then
		(umask 077 && head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24 \
			>"$DC/secrets/db_password")
	fi
	# shellcheck disable=SC2034 # used by configs.sh and daemons.sh
	DB_PASSWORD=$(<"$DC/secrets/db_password")
}

# Eight fake GPUs: character devices cloned from /dev/null (c 1 3). slurmd drops a
# gres.conf gpu line without File= and then drains the node as "inval".
ensure_gpu_devices() {
	local i dev
	for ((i = 0; i < GPU_COUNT; i++)); do
		dev=$DC/dev/nvidia$i
		[[ -c $dev ]] && continue
		rm -f "$dev"
		mknod -m 666 "$dev" c 1 3
	done
}

# sshd host key, client key, known_hosts, authorized_keys of the test users.
ensure_ssh_keys() {
	local hostkey=$DC/sshd/ssh_host_ed25519_key u home
	if [[ ! -s $hostkey ]]; then
		rm -f "$hostkey" "$hostkey.pub"
		ssh-keygen -q -t ed25519 -N '' -C "slurmdash-dev-host" -f "$hostkey"
		CHANGED+=" sshd"
	fi
	chmod 600 "$hostkey"
	if [[ ! -s $SSH_DIR/id_ed25519 ]]; then
		rm -f "$SSH_DIR/id_ed25519" "$SSH_DIR/id_ed25519.pub"
		ssh-keygen -q -t ed25519 -N '' -C "slurmdash-dev-client" -f "$SSH_DIR/id_ed25519"
	fi
	chmod 600 "$SSH_DIR/id_ed25519"
	local hostpub
	read -r -a hostpub <"$hostkey.pub"
	printf '[127.0.0.1]:%s %s %s\n' "$SSH_PORT" "${hostpub[0]}" "${hostpub[1]}" |
		write_file "$SSH_DIR/known_hosts" 600 || true
	for u in "${TEST_USERS[@]}"; do
		home=$(getent passwd "$u" | cut -d: -f6)
		install -d -m 700 -o "$u" -g "$(id -gn "$u")" "$home/.ssh"
		if write_file "$home/.ssh/authorized_keys" 600 <"$SSH_DIR/id_ed25519.pub"; then
			chown "$u:$(id -gn "$u")" "$home/.ssh/authorized_keys"
		fi
	done
}
