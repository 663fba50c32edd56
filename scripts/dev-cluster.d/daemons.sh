# shellcheck shell=bash
# Starting each daemon and waiting until it really serves. Sourced, never run.
# Every daemon runs in the foreground of its own session (see start_daemon), as root,
# so files under a 0700 parent directory never block it. A chroot version's daemons
# run through `chroot` (inroot); its compute nodes through node-init.

munge_works() { inroot munge -n </dev/null 2>/dev/null | inroot unmunge >/dev/null 2>&1; }

# munged serves the default socket (/run/munge/munge.socket.2, the chroot's own for a
# chroot version) because every Slurm client, including the test users' over ssh,
# talks to that one. If a munged that we did not start already serves it (22.05 only),
# we use it and leave it alone.
up_munged() {
	is_alive munged && return 0
	if munge_works; then
		say "munged: using the munged already serving /run/munge/munge.socket.2 (not ours)"
		return 0
	fi
	say "starting munged"
	start_daemon munged inroot munged --foreground --force \
		--key-file="$SD_IN/secrets/munge.key" \
		--seed-file="$SD_IN/state/munge/munged.seed" \
		--pid-file="$RUN_IN/munged.daemon.pid"
	wait_ready munged 10 "munge -n | unmunge" munge_works
}

db() { inroot mariadb --no-defaults --socket="$DB_SOCKET_IN" -u root; }

up_mariadbd() {
	if ! is_alive mariadbd; then
		if [[ ! -e $SD/state/mysql.initialized || ! -d $DB_DIR/mysql ]]; then
			say "initialising MariaDB datadir $DB_DIR"
			rm -rf "$DB_DIR"
			mkdir -p "$DB_DIR"
			chmod 700 "$DB_DIR"
			inroot mariadb-install-db --no-defaults --datadir="$SD_IN/mysql" --user=root \
				--auth-root-authentication-method=socket --skip-test-db \
				>>"$(log_file mariadbd)" 2>&1 ||
				die_daemon mariadbd "mariadb-install-db failed"
			touch "$SD/state/mysql.initialized"
		fi
		check_port mariadbd "$DB_PORT"
		say "starting mariadbd (127.0.0.1:$DB_PORT)"
		# No daemonize flag: start_daemon runs it via setsid in the background.
		start_daemon mariadbd inroot mariadbd --no-defaults --user=root \
			--datadir="$SD_IN/mysql" --socket="$DB_SOCKET_IN" --pid-file="$RUN_IN/mariadbd.daemon.pid" \
			--port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
			--innodb-buffer-pool-size=256M --innodb-log-file-size=64M \
			--innodb-lock-wait-timeout=900 --innodb-flush-log-at-trx-commit=2 \
			--max-connections=200
		wait_ready mariadbd 60 "mariadb-admin ping on $DB_SOCKET" \
			inroot mariadb-admin --no-defaults --socket="$DB_SOCKET_IN" -u root ping
	fi
	# slurmdbd's DB user, for both host names (localhost and 127.0.0.1). Idempotent.
	local h sql="CREATE DATABASE IF NOT EXISTS slurm_acct_db;"
	for h in localhost 127.0.0.1; do
		sql+="CREATE USER IF NOT EXISTS 'slurm'@'$h' IDENTIFIED BY '$DB_PASSWORD';"
		sql+="ALTER USER 'slurm'@'$h' IDENTIFIED BY '$DB_PASSWORD';"
		sql+="GRANT ALL ON slurm_acct_db.* TO 'slurm'@'$h';"
	done
	# (on stdin, so the password never shows in ps)
	db <<<"$sql" 2>>"$(log_file mariadbd)" || die_daemon mariadbd "creating the slurm DB user failed"
}

sacctmgr_works() { inroot sacctmgr -n -P show cluster format=cluster; }

up_slurmdbd() {
	is_alive slurmdbd && return 0
	check_port slurmdbd "$DBD_PORT"
	say "starting slurmdbd"
	start_daemon slurmdbd inroot slurmdbd -D
	wait_ready slurmdbd 60 "sacctmgr show cluster" sacctmgr_works
}

# Cluster, accounts and users in slurmdbd (sacctmgr -i, only what is missing).
setup_accounting() {
	local have
	have=$(inroot sacctmgr -n -P show assoc format=cluster,account,user 2>&1) ||
		die_daemon slurmdbd "sacctmgr show assoc failed: $have"
	have=$'\n'$have$'\n'
	local -a todo=()
	[[ $have == *$'\n'"$CLUSTER|root|"$'\n'* ]] ||
		todo+=("add cluster $CLUSTER")
	[[ $have == *$'\n'"$CLUSTER|research|"$'\n'* ]] ||
		todo+=("add account research cluster=$CLUSTER description=research organization=slurmdash fairshare=60")
	[[ $have == *$'\n'"$CLUSTER|vision|"$'\n'* ]] ||
		todo+=("add account vision cluster=$CLUSTER description=vision organization=slurmdash fairshare=40")
	[[ $have == *$'\n'"$CLUSTER|research|sduser"$'\n'* && $have == *$'\n'"$CLUSTER|vision|sduser"$'\n'* ]] ||
		todo+=("add user sduser cluster=$CLUSTER account=research,vision defaultaccount=research")
	local u
	for u in sdother "${SHELL_USERS[@]}"; do
		[[ $have == *$'\n'"$CLUSTER|research|$u"$'\n'* ]] ||
			todo+=("add user $u cluster=$CLUSTER account=research defaultaccount=research")
	done
	((${#todo[@]} == 0)) && return 0
	say "setting up accounting: cluster $CLUSTER, accounts research+vision, users sduser+sdother, research for ${SHELL_USERS[*]}"
	local cmd out
	for cmd in "${todo[@]}"; do
		# shellcheck disable=SC2086 # the words of a fixed sacctmgr command
		out=$(inroot sacctmgr -i $cmd 2>&1) || {
			# "Nothing new added" exits 1 when a part already exists: not an error.
			[[ $out == *"Nothing new added"* || $out == *"already exists"* ]] ||
				die_daemon slurmdbd "sacctmgr -i $cmd failed: $out"
		}
	done
}

up_slurmctld() {
	is_alive slurmctld && return 0
	check_port slurmctld "$CTLD_PORT"
	say "starting slurmctld"
	start_daemon slurmctld inroot slurmctld -D
	wait_ready slurmctld 60 "sinfo answers" inroot sinfo -h -o %P
}

node_state() { inroot scontrol -o show node "$1" 2>/dev/null | grep -o 'State=[^ ]*' | cut -d= -f2; }

# One slurmd per node: in the node's network namespace (nsenter), with its own UTS and
# mount namespaces (unshare), host name, cgroup subtrees and (for a chroot version) the
# root directory set by node-init, which then execs slurmd.
start_node() {
	local n=$1 ns
	ns=$(node_netns "$n")
	# (the config where a site with several clusters keeps it: site_conf in configs.sh)
	local -a cmd=(slurmd -D -N "$n" -f "$SITE_CONF_IN")
	say "starting slurmd of node $n ($(node_addr "$n"))"
	start_daemon "slurmd@$n" nsenter --net="/run/netns/$ns" -- \
		unshare --uts --mount --propagation private -- \
		"$LIB/node-init" "$n" "$(node_cgroup "$n")" "$ROOT" "${cmd[@]}"
}

up_nodes() {
	local n
	for n in "${NODES[@]}"; do
		is_alive "slurmd@$n" || start_node "$n"
	done
	# Wait until every node is usable. A node left DOWN/DRAIN by a previous run (the
	# state is saved) is resumed; one still NOT_RESPONDING has not registered yet.
	local st deadline
	declare -A resumed=()
	deadline=$(($(now_ms) + 60000))
	for n in "${NODES[@]}"; do
		resumed[$n]=0
		while :; do
			st=$(node_state "$n" || true)
			case "+$st+" in
			*+NOT_RESPONDING+* | ++) ;;
			*+DRAIN+* | *+DOWN+* | *+FAIL+* | *+INVAL+*)
				if ((resumed[$n] == 0 || $(now_ms) > resumed[$n] + 3000)); then
					say "node $n is $st: resuming it"
					inroot scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true
					resumed[$n]=$(now_ms)
				fi
				;;
			+IDLE+* | +MIXED+* | +ALLOCATED+* | +COMPLETING+*) break ;;
			esac
			is_alive "slurmd@$n" || die_daemon "slurmd@$n" "exited while starting (node state: ${st:-unknown})"
			if (($(now_ms) > deadline)); then
				local reason
				reason=$(inroot scontrol -o show node "$n" 2>/dev/null | grep -o 'Reason=.*' || true)
				die_daemon "slurmd@$n" "node $n not usable after 60s: state ${st:-unknown} ${reason}"
			fi
			sleep 0.2
		done
	done
}

# The cgroup subtrees node-init made, once their slurmd is gone (only empty
# directories can be removed; a job cgroup still busy stays and is named).
remove_node_cgroups() {
	local n mp sub
	for n in "${NODES[@]}"; do
		for mp in /sys/fs/cgroup/*; do
			sub=$mp/$(node_cgroup "$n")
			[[ -d $sub ]] || continue
			find "$sub" -depth -type d -exec rmdir {} + 2>/dev/null ||
				[[ ! -d $sub ]] || warn "cgroup $sub is still in use; left in place"
		done
	done
}

ssh_alias_works() { ssh -F "$SSH_DIR/config" "$1" true </dev/null; }

up_sshd() {
	if ! is_alive sshd; then
		check_port sshd "$SSH_PORT"
		say "starting sshd (127.0.0.1:$SSH_PORT)"
		inroot /usr/sbin/sshd -t -f "$(sshd_dir_in)/sshd_config" >>"$(log_file sshd)" 2>&1 ||
			die_daemon sshd "sshd -t rejected $SD/sshd/sshd_config"
		start_daemon sshd inroot /usr/sbin/sshd -D -e -f "$(sshd_dir_in)/sshd_config"
		wait_ready sshd 15 "ssh $SSH_ALIAS true" ssh_alias_works "$SSH_ALIAS"
	fi
	# (the main alias is also checked end to end by check_end_to_end)
	wait_ready sshd 15 "ssh $SSH_ALIAS-other true" ssh_alias_works "$SSH_ALIAS-other"
}

# End to end: a Slurm client run as the test user over ssh reaches slurmctld, and every
# SHELL_USERS account logs in (sshd turns away a user whose login shell is missing). The
# logins run side by side: one after the other they would add seconds to every `up`.
check_end_to_end() {
	local out u tmp
	local -A pids=()
	tmp=$(mktemp -d)
	for u in "${SHELL_USERS[@]}"; do
		ssh -F "$SSH_DIR/config" "$SSH_ALIAS-${u#sd}" true </dev/null >"$tmp/$u" 2>&1 &
		pids[$u]=$!
	done
	out=$(ssh -F "$SSH_DIR/config" "$SSH_ALIAS" sinfo -h -o %P </dev/null 2>&1) || {
		wait "${pids[@]}" 2>/dev/null
		rm -rf "$tmp"
		die "ssh $SSH_ALIAS sinfo failed: $out (ssh config $SSH_DIR/config, sshd log $(log_file sshd))"
	}
	for u in "${SHELL_USERS[@]}"; do
		wait "${pids[$u]}" && continue
		out=$(<"$tmp/$u")
		# (the logins only: a bare \`wait\` would wait for a daemon this \`up\` started too)
		wait "${pids[@]}" 2>/dev/null
		rm -rf "$tmp"
		die "ssh $SSH_ALIAS-${u#sd} true failed: $out (ssh config $SSH_DIR/config, sshd log $(log_file sshd))"
	done
	rm -rf "$tmp"
}
