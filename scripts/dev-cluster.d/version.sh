# shellcheck shell=bash
# Per-version layout of the dev cluster: paths, ports, addresses, nodes. Sourced by
# scripts/dev-cluster, never run.
#
#   version  packages            ports ctld/slurmd/dbd/mariadb/sshd  bridge, subnet
#   22.05    this machine's      6817/6818/6819/3307/22022          sdbr2205 10.220.22.0/24
#   24.11    chroot (trixie)     6827/6828/6829/3317/22024          sdbr2411 10.220.24.0/24
#   26.05    chroot (sid)        6837/6838/6839/3327/22026          sdbr2605 10.220.26.0/24
#
# Host paths vs. the daemons' own: for 22.05 both are the same ($DC); a chroot
# version's daemons see its state dir $DC/<V>/root/dc as /dc and its configs in the
# chroot's /etc/slurm.

# Compute nodes (the same names in every version; each version resolves them in its
# own /etc/hosts: the machine's for 22.05, the chroot's otherwise).
# spare01 and spare02 form partition `spare` alone: the node-failure tests take them down,
# so no other test's job is ever on a node that goes down under it.
NODES=(gpu01 gpu02 cpu01 spare01 spare02)
declare -A NODE_CPUS=([gpu01]=16 [gpu02]=16 [cpu01]=8 [spare01]=4 [spare02]=4)
declare -A NODE_MEM_MB=([gpu01]=16384 [gpu02]=16384 [cpu01]=8192 [spare01]=4096 [spare02]=4096)
declare -A NODE_GPUS=([gpu01]=8 [gpu02]=8 [cpu01]=0 [spare01]=2 [spare02]=2)
declare -A NODE_HOST=([gpu01]=11 [gpu02]=12 [cpu01]=13 [spare01]=14 [spare02]=15)
GPU_NODES=(gpu01 gpu02)
CPU_NODES=(cpu01)
SPARE_NODES=(spare01 spare02)
GPU_COUNT=8

select_version() {
	VER=$1
	case $VER in
	22.05)
		VTAG=2205 SUITE="" PORT_BASE=6810 DB_PORT=3307 SSH_PORT=22022
		ROOT="" VDIR=$DC SD=$DC SD_IN=$DC
		;;
	24.11)
		VTAG=2411 SUITE=trixie PORT_BASE=6820 DB_PORT=3317 SSH_PORT=22024
		VDIR=$DC/$VER ROOT=$DC/$VER/root SD=$DC/$VER/root/dc SD_IN=/dc
		;;
	26.05)
		VTAG=2605 SUITE=sid PORT_BASE=6830 DB_PORT=3327 SSH_PORT=22026
		VDIR=$DC/$VER ROOT=$DC/$VER/root SD=$DC/$VER/root/dc SD_IN=/dc
		;;
	*) die "unknown Slurm version '$VER': use 22.05, 24.11 or 26.05" ;;
	esac
	CTLD_PORT=$((PORT_BASE + 7))
	SLURMD_PORT=$((PORT_BASE + 8))
	DBD_PORT=$((PORT_BASE + 9))
	NET=10.220.${VER%%.*}
	CTL_ADDR=$NET.1
	BRIDGE=sdbr$VTAG
	ETC=$ROOT/etc/slurm
	RUN=$SD/run
	LOG=$SD/log
	RUN_IN=$SD_IN/run
	LOG_IN=$SD_IN/log
	DB_DIR=$SD/mysql
	DB_SOCKET=$RUN/mysqld.sock
	DB_SOCKET_IN=$RUN_IN/mysqld.sock
	SSH_DIR=$VDIR/ssh
	# One client key and one sshd host key for every version (the same users' homes).
	CLIENT_KEY=$DC/ssh/id_ed25519
	HOST_KEY=$DC/sshd/ssh_host_ed25519_key
	NODE_DAEMONS=()
	local n
	for n in "${NODES[@]}"; do NODE_DAEMONS+=("slurmd@$n"); done
	DAEMONS=(munged mariadbd slurmdbd slurmctld "${NODE_DAEMONS[@]}" sshd)
}

# Runs a command as the version's Slurm sees the world: in its chroot, or here.
inroot() {
	if [[ -n $ROOT ]]; then
		chroot "$ROOT" "$@"
	else
		"$@"
	fi
}

node_addr() { printf '%s.%s' "$NET" "${NODE_HOST[$1]}"; }
node_netns() { printf 'sd%s-%s' "$VTAG" "$1"; }
# The cgroup directory (under each v1 controller) that is the node's cgroup root.
node_cgroup() { printf 'slurmdash-%s-%s' "$VER" "$1"; }
