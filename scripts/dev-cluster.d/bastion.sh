# shellcheck shell=bash
# A login node reachable only through a bastion (jump host) that asks for a key and a
# one-time code, the way many sites guard their clusters. Slurm 22.05 only (its tests of
# the login are shared by every version). Sourced by scripts/dev-cluster, never run.
#
#   bastion_up     the two network namespaces, the firewall, both sshds, the client
#                  aliases `bastion` and `innerlogin` (.dev-cluster/ssh/config-bastion)
#                  and a slurmdash config (.dev-cluster/slurmdash-bastion.toml)
#   bastion_down   stop both sshds, remove their namespaces
#   bastion_status one line per sshd
#
# On 22.05's bridge, beside the compute nodes:
#   sd2205-bastion  $NET.201:22  sshd: key + one-time code (PAM service sshd-2fa, the
#                                same TOTP secret as totp.sh), forwards to the login node
#   sd2205-inner    $NET.202:22  sshd: key only; its firewall resets every SSH connection
#                                that does not come from the bastion's address
# The login node reaches slurmctld and slurmdbd over the bridge, as the nodes do, and
# munge through its socket (a network namespace keeps the file system). Try:
#   ssh -F .dev-cluster/ssh/config-bastion innerlogin squeue   (asks for the code once)

BASTION_ADDR_HOST=201
INNER_ADDR_HOST=202
BASTION_DIR=$DC/bastion
BASTION_RUN=$BASTION_DIR/run
BASTION_LOG=$BASTION_DIR/log
PACKAGES+=(iptables)

bastion_addr() { printf '%s.%s' "$NET" "$BASTION_ADDR_HOST"; }
inner_addr() { printf '%s.%s' "$NET" "$INNER_ADDR_HOST"; }
bastion_netns() { printf 'sd%s-bastion' "$VTAG"; }
inner_netns() { printf 'sd%s-inner' "$VTAG"; }

render_bastion_sshd_config() {
	cat <<EOF
# Bastion of the slurmdash dev cluster (scripts/dev-cluster.d/bastion.sh): key, then a
# one-time code; it only forwards to the login node behind it.
Port 22
ListenAddress $(bastion_addr)
HostKey $HOST_KEY
PidFile $BASTION_RUN/sshd-bastion.daemon.pid
AllowUsers $TOTP_USER
PermitRootLogin no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication yes
UsePAM yes
AuthenticationMethods publickey,keyboard-interactive
AllowTcpForwarding yes
PermitOpen $(inner_addr):22
MaxAuthTries 6
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
EOF
}

render_inner_sshd_config() {
	cat <<EOF
# Login node behind the bastion (scripts/dev-cluster.d/bastion.sh): key only; reachable
# from the bastion alone (a firewall in its namespace resets everything else).
Port 22
ListenAddress $(inner_addr)
HostKey $HOST_KEY
PidFile $BASTION_RUN/sshd-inner.daemon.pid
AllowUsers $TOTP_USER
PermitRootLogin no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
}

# No BatchMode (the bastion prompts) and no ConnectTimeout on innerlogin: through a
# ProxyJump it would also cover the wait for the bastion's code (docs/connections.md).
render_bastion_client_config() {
	cat <<EOF
Host bastion
    HostName $(bastion_addr)
    User $TOTP_USER
    IdentityFile $CLIENT_KEY
    IdentitiesOnly yes
    UserKnownHostsFile $DC/ssh/known_hosts_bastion
    StrictHostKeyChecking yes
    PreferredAuthentications publickey,keyboard-interactive
    ConnectTimeout 5

Host innerlogin
    HostName $(inner_addr)
    User $TOTP_USER
    IdentityFile $CLIENT_KEY
    IdentitiesOnly yes
    UserKnownHostsFile $DC/ssh/known_hosts_bastion
    StrictHostKeyChecking yes
    ProxyJump bastion
EOF
}

render_bastion_slurmdash_toml() {
	cat <<EOF
default_cluster = "inner"

# No slurmctld RPC budget: the tests wait for screens with deadlines (docs/testing.md).
[poll]
max_rpcs_per_minute = 0

[clusters.inner]
hosts = ["innerlogin"]
ssh_config = "$DC/ssh/config-bastion"
user = "$TOTP_USER"
interactive_login = true
partition = "short"
account = "research"
results_root = "/lustre/fsw/$TOTP_USER/results"
EOF
}

# A namespace on the bridge at $NET.$2, joined by veth v$VTAG$3.
ensure_side_netns() {
	local ns=$1 addr=$NET.$2 veth=v$VTAG$3 have
	[[ -e /run/netns/$ns ]] || ip netns add "$ns"
	if ! ip link show "$veth" >/dev/null 2>&1; then
		ip link add "$veth" type veth peer name eth0 netns "$ns"
		ip link set "$veth" master "$BRIDGE"
	fi
	ip link set "$veth" up
	ip -n "$ns" link set lo up
	have=$(ip -n "$ns" -o addr show dev eth0)
	[[ $have == *" $addr/24 "* ]] || ip -n "$ns" addr add "$addr/24" dev eth0
	ip -n "$ns" link set eth0 up
}

# The login node's firewall: SSH from the bastion only; anything else gets a reset (what
# a person trying to skip the bastion sees: "Connection refused"). Rewritten every time.
ensure_inner_firewall() {
	local ns
	ns=$(inner_netns)
	ip netns exec "$ns" iptables -F INPUT
	ip netns exec "$ns" iptables -A INPUT -p tcp --dport 22 -s "$(bastion_addr)" -j ACCEPT
	ip netns exec "$ns" iptables -A INPUT -p tcp --dport 22 -j REJECT --reject-with tcp-reset
}

# up_side_sshd NAME NETNS ADDR CONFIG PROGRAM: starts one of the two sshds in its namespace.
up_side_sshd() {
	local name=$1 ns=$2 addr=$3 config=$4 program=$5
	is_alive "$name" && return 0
	/usr/sbin/sshd -t -f "$config" >>"$(log_file "$name")" 2>&1 ||
		die_daemon "$name" "sshd -t rejected $config"
	say "starting $name ($addr:22 in namespace $ns)"
	# (the absolute path of the program: sshd re-executes itself from argv[0])
	start_daemon "$name" nsenter --net="/run/netns/$ns" -- "$program" -D -e -f "$config"
	wait_ready "$name" 15 "$addr:22 listening" side_listening "$ns" "$addr"
}

side_listening() { ip netns exec "$1" ss -Hltn "src $2 and sport = :22" | grep -q .; }

bastion_up() {
	[[ $VER == 22.05 ]] || return 0
	local owner hostpub RUN=$BASTION_RUN LOG=$BASTION_LOG changed_b=0 changed_i=0
	owner=$(stat -c '%u:%g' "$REPO")
	mkdir -p "$BASTION_RUN" "$BASTION_LOG"
	ensure_side_netns "$(bastion_netns)" "$BASTION_ADDR_HOST" bastion
	ensure_side_netns "$(inner_netns)" "$INNER_ADDR_HOST" inner
	ensure_inner_firewall
	render_bastion_sshd_config | write_file "$DC/sshd/sshd_config_bastion" 600 && changed_b=1
	render_inner_sshd_config | write_file "$DC/sshd/sshd_config_inner" 600 && changed_i=1
	render_bastion_client_config | write_file "$DC/ssh/config-bastion" 600 || true
	read -r -a hostpub <"$HOST_KEY.pub"
	printf '%s %s %s\n' "$(bastion_addr)" "${hostpub[0]}" "${hostpub[1]}" "$(inner_addr)" "${hostpub[0]}" "${hostpub[1]}" |
		write_file "$DC/ssh/known_hosts_bastion" 600 || true
	render_bastion_slurmdash_toml | write_file "$DC/slurmdash-bastion.toml" 644 || true
	chown "$owner" "$DC/ssh/config-bastion" "$DC/ssh/known_hosts_bastion" "$DC/slurmdash-bastion.toml"
	if ((changed_b)) && is_alive sshd-bastion; then
		say "config of sshd-bastion changed: restarting it"
		stop_daemon sshd-bastion
	fi
	if ((changed_i)) && is_alive sshd-inner; then
		say "config of sshd-inner changed: restarting it"
		stop_daemon sshd-inner
	fi
	# (the bastion asks PAM under the 2FA sshd's service name: totp_up made its symlink)
	up_side_sshd sshd-bastion "$(bastion_netns)" "$(bastion_addr)" "$DC/sshd/sshd_config_bastion" \
		"$TOTP_DIR/$TOTP_PAM_SERVICE"
	up_side_sshd sshd-inner "$(inner_netns)" "$(inner_addr)" "$DC/sshd/sshd_config_inner" /usr/sbin/sshd
	check_bastion
}

# The bastion asks for the code (a BatchMode login is refused after the key), and the
# login node cannot be reached without it (the firewall resets a direct connection).
check_bastion() {
	local out
	out=$(ssh -F "$DC/ssh/config-bastion" -o BatchMode=yes bastion true </dev/null 2>&1) &&
		die "ssh bastion logged in without a one-time code (config $DC/sshd/sshd_config_bastion)"
	[[ $out == *"Permission denied (keyboard-interactive)"* ]] ||
		die "ssh bastion: expected a refusal after the key, got: $out (log $(log_file sshd-bastion))"
	out=$(ssh -F "$DC/ssh/config-bastion" -o BatchMode=yes -o ProxyJump=none innerlogin true </dev/null 2>&1) &&
		die "the login node behind the bastion let a direct connection in"
	[[ $out == *"Connection refused"* ]] ||
		die "a direct connection to the login node: expected Connection refused, got: $out"
}

# Status lines of both sshds (informative: `status`'s exit code does not count them).
bastion_status() {
	[[ $VER == 22.05 ]] || return 0
	local RUN=$BASTION_RUN LOG=$BASTION_LOG d pid addr
	for d in sshd-bastion sshd-inner; do
		addr=$(bastion_addr):22
		[[ $d == sshd-inner ]] && addr=$(inner_addr):22
		if pid=$(alive_pid "$d"); then
			printf '  %-14s up    pid %-8s %-20s log %s\n' "$d" "$pid" "$addr" "$(log_file "$d")"
		else
			printf '  %-14s DOWN  %-12s %-20s log %s\n' "$d" "" "$addr" "$(log_file "$d")"
		fi
	done
}

bastion_down() {
	[[ $VER == 22.05 ]] || return 0
	local RUN=$BASTION_RUN LOG=$BASTION_LOG ns
	[[ -d $BASTION_RUN ]] && {
		stop_daemon sshd-inner
		stop_daemon sshd-bastion
	}
	for ns in "$(inner_netns)" "$(bastion_netns)"; do
		ip link del "v$VTAG${ns##*-}" 2>/dev/null || true
		[[ -e /run/netns/$ns ]] && ip netns del "$ns"
	done
	return 0
}
