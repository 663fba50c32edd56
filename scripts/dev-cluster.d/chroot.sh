# shellcheck shell=bash
# The chroot of a newer Slurm (24.11: Debian trixie, 26.05: Debian sid), made once with
# debootstrap from the package mirror apt already uses, and the mounts it needs while
# the cluster runs. Sourced by scripts/dev-cluster, never run.

CHROOT_BASE_PACKAGES=slurmctld,slurmd,slurmdbd,slurm-client,munge,mariadb-server,openssh-server,procps,python3,iproute2,tmux
# Installed with apt inside the chroot once it exists (and into an older chroot on the
# next `up`): clients, the test users' login shells (accounts.sh), and what
# containers.sh needs to build Pyxis against this Slurm and to run Enroot on the nodes.
CHROOT_EXTRA_PACKAGES=(mariadb-client openssh-client python3 less tcsh fish zsh ksh93u+m
	libslurm-dev gcc make libc6-dev libcap2-bin squashfs-tools jq parallel zstd curl gawk
	libbsd0 ca-certificates)

# The mirror of this machine's apt sources (deb822 or one-line format).
apt_mirror() {
	local m
	m=$(grep -rhoE '^URIs: *http[^ ]*/debian/?$' /etc/apt/sources.list.d/ 2>/dev/null | head -n 1 | sed 's/^URIs: *//') || true
	[[ -n $m ]] || m=$(grep -rhoE '^deb +http[^ ]*/debian/? ' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -n 1 | awk '{print $2}') || true
	printf '%s' "${m:-http://deb.debian.org/debian}"
}

ensure_chroot() {
	if [[ ! -x $ROOT/usr/sbin/slurmctld ]]; then
		command -v debootstrap >/dev/null || {
			say "installing debootstrap"
			host_apt_install debootstrap >/dev/null || die "apt-get install debootstrap failed"
		}
		local mirror partial=$VDIR/root.partial
		mirror=$(apt_mirror)
		say "making the Slurm $VER chroot: debootstrap $SUITE from $mirror (a few minutes, once; log $VDIR/debootstrap.log)"
		rm -rf "$partial"
		mkdir -p "$VDIR"
		debootstrap --variant=minbase --include="$CHROOT_BASE_PACKAGES" "$SUITE" "$partial" "$mirror" \
			>"$VDIR/debootstrap.log" 2>&1 || die "debootstrap $SUITE failed: see $VDIR/debootstrap.log"
		rm -rf "$ROOT"
		mv "$partial" "$ROOT"
	fi
	# No init in the chroot: never let a package start a service there.
	printf '#!/bin/sh\n# slurmdash dev-cluster: no services in this chroot\nexit 101\n' |
		write_file "$ROOT/usr/sbin/policy-rc.d" 755 || true
	mount_chroot
	local p missing=() want=("${CHROOT_EXTRA_PACKAGES[@]}")
	if declare -F containers_chroot_packages >/dev/null; then
		# shellcheck disable=SC2207 # a list of package names
		want+=($(containers_chroot_packages))
	fi
	for p in "${want[@]}"; do
		[[ $(chroot "$ROOT" dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] ||
			missing+=("$p")
	done
	if ((${#missing[@]})); then
		say "installing into the $VER chroot: ${missing[*]}"
		{
			chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false update -q &&
				chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
					--no-install-recommends "${missing[@]}"
		} </dev/null >>"$VDIR/apt.log" 2>&1 || die "apt-get in the $VER chroot failed: see $VDIR/apt.log"
	fi
}

# proc, sys (with this machine's cgroup hierarchies), dev, and the test users' homes
# and scratch trees (shared with the other versions). rslave: unmounting them here
# never unmounts anything outside the chroot.
mount_chroot() {
	local src dst
	mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
	for src in /sys /dev /home /lustre; do
		dst=$ROOT$src
		mkdir -p "$src" "$dst"
		mountpoint -q "$dst" && continue
		mount --rbind "$src" "$dst"
		mount --make-rslave "$dst"
	done
}

unmount_chroot() {
	local dst
	for dst in "$ROOT/lustre" "$ROOT/home" "$ROOT/dev" "$ROOT/sys" "$ROOT/proc"; do
		mountpoint -q "$dst" || continue
		umount -R "$dst" 2>/dev/null || umount -R -l "$dst" || warn "could not unmount $dst"
	done
}
