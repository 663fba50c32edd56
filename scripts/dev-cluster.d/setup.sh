# shellcheck shell=bash
# Everything `up` prepares before starting daemons: packages, users, directories, keys,
# fake GPUs and config files. Each step is idempotent and cheap when already done.
# Sourced by scripts/dev-cluster, never run.

# (tcsh fish zsh ksh93u+m: the test users' login shells, accounts.sh; Debian's `ksh`
# is only a transitional package for ksh93u+m, and sid has dropped it)
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server mariadb-client openssh-server
	openssh-client tmux iproute2 procps python3 tcsh fish zsh ksh93u+m)

ensure_packages() {
	local p missing=()
	for p in "${PACKAGES[@]}"; do
		[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	say "installing missing packages: ${missing[*]}"
	host_apt_install "${missing[@]}" || die "apt-get failed installing: ${missing[*]}"
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

# SlurmdSpoolDir (one per node: %n) lives in the state dir unless the repo sits under a
# directory that job users cannot traverse (a 0700 home): then batch scripts there fail
# with "execve(): Permission denied", so it moves to /var/spool/slurmdash-dev/slurmd.
# (A chroot version's state dir is /dc inside the chroot: always traversable.)
choose_spool_dir() {
	SPOOL_DIR=$SD_IN/state/slurmd
	if [[ -z $ROOT ]] && ! traversable_by_all "$REPO"; then
		SPOOL_DIR=/var/spool/slurmdash-dev/slurmd
		say "note: $REPO is not traversable by other users; SlurmdSpoolDir is $SPOOL_DIR/<node>"
	fi
}

ensure_dirs() {
	choose_spool_dir
	mkdir -p "$DC" "$VDIR" "$SD"
	chmod 755 "$DC" "$VDIR" "$SD"
	mkdir -p "$RUN" "$LOG" "$SD/state/slurmctld" "$SD/state/munge" \
		"$SD/secrets" "$SD/dev" "$DC/sshd" "$DC/ssh" "$SSH_DIR" "$ROOT$SPOOL_DIR" "$ETC"
	chmod 700 "$SD/secrets" "$DC/sshd" "$SD/state/munge" "$SD/state/slurmctld"
	# slurmstepd execs the batch script from SlurmdSpoolDir as the job's user.
	chmod 755 "$SD/state" "$ROOT$SPOOL_DIR" "$RUN" "$LOG"
	local n
	for n in "${NODES[@]}"; do
		mkdir -p "$ROOT$SPOOL_DIR/$n"
		chmod 755 "$ROOT$SPOOL_DIR/$n"
	done
	mkdir -p "$ROOT/run/munge" "$ROOT/run/sshd"
	chmod 755 "$ROOT/run/munge" "$ROOT/run/sshd"
	# The unix socket path of mariadbd must fit in sun_path (108 bytes).
	((${#DB_SOCKET} < 100)) ||
		die "repo path too long for a unix socket ($DB_SOCKET); move the repo to a shorter path"
}

# Test users: sshd (without PAM) refuses a '!'-locked account even for key logins, so
# the password field is '*' (no password login possible, account not locked). A chroot
# gets the same users (same uid/gid) and sees this machine's /home and /lustre. Each has
# the login shell accounts.sh names, which must exist in both places: sshd refuses a
# user whose shell is missing, and says so only in its own log.
ensure_users() {
	local u pw uid gid grp sh
	for u in "${TEST_USERS[@]}" "${SHELL_USERS[@]}"; do
		sh=$(login_shell "$u")
		[[ -x $sh ]] || die "$sh (login shell of $u) is missing on this machine"
		if ! id -u "$u" >/dev/null 2>&1; then
			useradd -m -s "$sh" -p '*' "$u"
			say "created user $u (login shell $sh)"
		fi
		pw=$(getent shadow "$u" | cut -d: -f2)
		[[ $pw == '*' ]] || usermod -p '*' "$u"
		[[ $(getent passwd "$u" | cut -d: -f7) == "$sh" ]] || usermod -s "$sh" "$u"
		# Scratch tree convention of the real clusters: /lustre/fsw/<user>/results.
		install -d -m 755 /lustre /lustre/fsw
		install -d -m 755 -o "$u" -g "$(id -gn "$u")" "/lustre/fsw/$u" "/lustre/fsw/$u/results"
		[[ -n $ROOT ]] || continue
		uid=$(id -u "$u") gid=$(id -g "$u") grp=$(id -gn "$u")
		sh=$(chroot_login_shell "$u")
		chroot "$ROOT" test -x "$sh" || die "$sh (login shell of $u) is missing in the $VER chroot"
		chroot "$ROOT" getent group "$grp" >/dev/null || chroot "$ROOT" groupadd -g "$gid" "$grp"
		chroot "$ROOT" getent passwd "$u" >/dev/null ||
			chroot "$ROOT" useradd -M -d "/home/$u" -u "$uid" -g "$gid" -s "$sh" -p '*' "$u"
		[[ $(chroot "$ROOT" id -u "$u") == "$uid" ]] ||
			die "user $u has uid $(chroot "$ROOT" id -u "$u") in the $VER chroot but $uid here (the homes are shared)"
		[[ $(chroot "$ROOT" getent passwd "$u" | cut -d: -f7) == "$sh" ]] ||
			chroot "$ROOT" usermod -s "$sh" "$u"
	done
}

ensure_secrets() {
	[[ -s $SD/secrets/munge.key ]] || inroot mungekey --create --keyfile="$SD_IN/secrets/munge.key"
	chmod 600 "$SD/secrets/munge.key"
	if [[ ! -s $SD/secrets/db_password ]]; then
		(umask 077 && head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24 \
			>"$SD/secrets/db_password")
	fi
	# shellcheck disable=SC2034 # used by configs.sh and daemons.sh
	DB_PASSWORD=$(<"$SD/secrets/db_password")
}

# Eight fake GPUs per GPU node: character devices cloned from /dev/null (c 1 3), the
# same files for every node (gres.conf only needs them to exist). slurmd drops a
# gres.conf gpu line without File= and then drains the node as "inval".
ensure_gpu_devices() {
	local i dev
	for ((i = 0; i < GPU_COUNT; i++)); do
		dev=$SD/dev/nvidia$i
		[[ -c $dev ]] && continue
		rm -f "$dev"
		mknod -m 666 "$dev" c 1 3
	done
}

# The stand-in nvidia-smi (fake-nvidia-smi) as /usr/local/bin/nvidia-smi in the nodes'
# root (the machine's, or the chroot's): jobs' steps find it on PATH; it reports the GPUs
# Slurm gave the step, on the nodes gres.conf gives GPUs to.
ensure_fake_nvidia_smi() {
	install -D -m 755 "$LIB/fake-nvidia-smi" "${ROOT%/}/usr/local/bin/nvidia-smi"
}

# sshd host key and client key (one each, shared by every version's sshd and ssh
# config), known_hosts, authorized_keys of the test users.
ensure_ssh_keys() {
	local u home
	if [[ ! -s $HOST_KEY ]]; then
		rm -f "$HOST_KEY" "$HOST_KEY.pub"
		ssh-keygen -q -t ed25519 -N '' -C "slurmdash-dev-host" -f "$HOST_KEY"
		CHANGED+=" sshd"
	fi
	chmod 600 "$HOST_KEY"
	if [[ ! -s $CLIENT_KEY ]]; then
		rm -f "$CLIENT_KEY" "$CLIENT_KEY.pub"
		ssh-keygen -q -t ed25519 -N '' -C "slurmdash-dev-client" -f "$CLIENT_KEY"
	fi
	chmod 600 "$CLIENT_KEY"
	if [[ -n $ROOT ]]; then
		install -d -m 700 "$SD/sshd"
		install -m 600 "$HOST_KEY" "$SD/sshd/ssh_host_ed25519_key"
		install -m 644 "$HOST_KEY.pub" "$SD/sshd/ssh_host_ed25519_key.pub"
	fi
	local hostpub
	read -r -a hostpub <"$HOST_KEY.pub"
	printf '[127.0.0.1]:%s %s %s\n' "$SSH_PORT" "${hostpub[0]}" "${hostpub[1]}" |
		write_file "$SSH_DIR/known_hosts" 600 || true
	for u in "${TEST_USERS[@]}" "${SHELL_USERS[@]}"; do
		home=$(getent passwd "$u" | cut -d: -f6)
		install -d -m 700 -o "$u" -g "$(id -gn "$u")" "$home/.ssh"
		if write_file "$home/.ssh/authorized_keys" 600 <"$CLIENT_KEY.pub"; then
			chown "$u:$(id -gn "$u")" "$home/.ssh/authorized_keys"
		fi
	done
}
