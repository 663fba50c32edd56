# shellcheck shell=bash
# The nodes' network: a bridge with the controller's address ($NET.1) and one network
# namespace per node, joined to the bridge by a veth pair. Sourced, never run.

HOSTS_MARK='# slurmdash dev-cluster'

ensure_network() {
	if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
		say "creating bridge $BRIDGE ($CTL_ADDR/24)"
		ip link add "$BRIDGE" type bridge
	fi
	# (captured first: `grep -q` in a pipe may SIGPIPE `ip`, which pipefail counts)
	local have
	have=$(ip -o addr show dev "$BRIDGE")
	[[ $have == *" $CTL_ADDR/24 "* ]] || ip addr add "$CTL_ADDR/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	local n ns veth
	for n in "${NODES[@]}"; do
		ns=$(node_netns "$n")
		veth=v$VTAG$n
		[[ -e /run/netns/$ns ]] || ip netns add "$ns"
		if ! ip link show "$veth" >/dev/null 2>&1; then
			ip link add "$veth" type veth peer name eth0 netns "$ns"
			ip link set "$veth" master "$BRIDGE"
		fi
		ip link set "$veth" up
		ip -n "$ns" link set lo up
		have=$(ip -n "$ns" -o addr show dev eth0)
		[[ $have == *" $(node_addr "$n")/24 "* ]] || ip -n "$ns" addr add "$(node_addr "$n")/24" dev eth0
		ip -n "$ns" link set eth0 up
	done
	write_hosts
}

# Node names must resolve on every node and on the login side (MASTER_ADDR is a node's
# host name). 22.05 uses this machine's /etc/hosts: marked lines, rewritten by `up`;
# a chroot version gets its own /etc/hosts.
render_hosts_lines() {
	local n
	printf '%s %s %s %s\n' "$CTL_ADDR" "slurmdash-ctl-$VTAG" "$HOSTS_MARK" "$VER"
	for n in "${NODES[@]}"; do
		printf '%s %s %s %s\n' "$(node_addr "$n")" "$n" "$HOSTS_MARK" "$VER"
	done
}

write_hosts() {
	if [[ -n $ROOT ]]; then
		{
			printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$(hostname)"
			render_hosts_lines
		} | write_file "$ROOT/etc/hosts" 644 || true
		return 0
	fi
	local tmp
	tmp=$(mktemp)
	grep -vF "$HOSTS_MARK $VER" /etc/hosts >"$tmp" || true
	render_hosts_lines >>"$tmp"
	if ! cmp -s "$tmp" /etc/hosts; then
		# /etc/hosts may be a bind mount: rewrite it in place, never replace it.
		cat "$tmp" >/etc/hosts
	fi
	rm -f "$tmp"
}

remove_network() {
	local n ns pids
	for n in "${NODES[@]}"; do
		ns=$(node_netns "$n")
		# What still runs in the node (a job's slurmstepd and its tasks, once slurmd is
		# gone) would outlive its network and hold the node COMPLETING after the next `up`.
		if [[ -e /run/netns/$ns ]]; then
			pids=$(ip netns pids "$ns" 2>/dev/null) || pids=""
			# shellcheck disable=SC2086
			[[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
		fi
		ip link del "v$VTAG$n" 2>/dev/null || true
		[[ -e /run/netns/$ns ]] && ip netns del "$ns"
	done
	ip link del "$BRIDGE" 2>/dev/null || true
	if [[ -z $ROOT ]] && grep -qF "$HOSTS_MARK $VER" /etc/hosts; then
		local tmp
		tmp=$(mktemp)
		grep -vF "$HOSTS_MARK $VER" /etc/hosts >"$tmp" || true
		cat "$tmp" >/etc/hosts
		rm -f "$tmp"
	fi
}
