# shellcheck shell=bash
# Containers on the dev cluster: Pyxis and Enroot built from the sources in
# ../shared/third_party/ (never part of this repository), and a local image registry with
# test images built here from Debian packages. Sourced by scripts/dev-cluster, never run.
#
#   containers_build                 once per `up`, on the host: build Enroot into
#                                    .dev-cluster/containers/ (cached), unpack Pyxis' source.
#                                    Without the sources it records why in
#                                    .dev-cluster/containers/unavailable (the container
#                                    tests fail with that sentence) and `up` goes on.
#   containers_install ROOT CONFDIR  per Slurm installation: ROOT is / for the host cluster
#                                    or a chroot; CONFDIR is the Slurm config dir as seen
#                                    inside ROOT. Builds Pyxis against ROOT's libslurm-dev
#                                    (cached per Slurm version), installs it and Enroot
#                                    into ROOT/usr/local and lists Pyxis in
#                                    ROOT/CONFDIR/plugstack.conf.d/pyxis.conf. srun and
#                                    slurmstepd read it for every step: no daemon restart.
#   registry_up / registry_down      docker-registry on port 5000 (public) and 5001
#                                    (private, htpasswd), with the test images pushed.
#                                    They serve read-only on every address of this
#                                    machine: the compute nodes live in network namespaces
#                                    and reach them only as their controller address
#                                    ($CTL_ADDR, e.g. 10.220.22.1), 127.0.0.1 from the
#                                    login side. Pushes happen on 127.0.0.1 only.
#   containers_chroot_packages       the packages a chroot's Slurm needs for the above.
#
# Test images (rebuilt only when missing from the registry), named here by the address
# the 22.05 nodes use:
#   10.220.22.1:5000/team/tiny:1.0     busybox: sh, no bash; /etc/os-release ID=slurmdash-tiny
#   10.220.22.1:5000/team/tiny:latest  the same image under :latest
#   10.220.22.1:5000/team/py:1.0       busybox + bash + python3; ID=slurmdash-py
#   10.220.22.1:5001/private/tiny:1.0  tiny, behind a login (user and password in
#                                      .dev-cluster/containers/registry/{user,password})
#   /lustre/images/tiny.sqsh           tiny as a squashfs file, for --container-image=/path.sqsh

CONTAINERS_DIR=$DC/containers
ENROOT_VERSION=4.1.2
PYXIS_VERSION=0.24.0
ENROOT_STAGE=$CONTAINERS_DIR/enroot-$ENROOT_VERSION
REGISTRY_PORT=5000
REGISTRY_PRIVATE_PORT=5001
REGISTRY_USER=sdpull
IMAGES_DIR=/lustre/images
# Pid files and logs of the registries: one set for every Slurm version.
CT_RUN=$CONTAINERS_DIR/run
CT_LOG=$CONTAINERS_DIR/log
# Build tools for Enroot and Pyxis, Enroot's runtime tools, the registry and image tools.
PACKAGES+=(libslurm-dev libbsd-dev makeself gcc make libc6-dev libcap2-bin squashfs-tools
	jq parallel zstd curl gawk docker-registry umoci skopeo busybox-static apache2-utils)

containers_chroot_packages() {
	printf '%s\n' libslurm-dev gcc make libc6-dev libcap2-bin squashfs-tools jq parallel \
		zstd curl gawk libbsd0 ca-certificates
}

# Where the third-party sources are: $SLURMDASH_THIRD_PARTY, else ../shared/third_party
# next to this checkout, else next to the main checkout when this one is a git worktree.
third_party_dir() {
	local d common
	for d in "${SLURMDASH_THIRD_PARTY:-}" "$REPO/../shared/third_party"; do
		[[ -n $d && -d $d ]] && {
			(cd "$d" && pwd -P)
			return 0
		}
	done
	common=$(git -C "$REPO" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) || return 1
	d=$(dirname "$common")/../shared/third_party
	[[ -d $d ]] || return 1
	(cd "$d" && pwd -P)
}

# Records why containers cannot work on this cluster: `up` warns, and every container
# test fails with this sentence instead of passing without a container.
containers_unavailable() {
	mkdir -p "$CONTAINERS_DIR"
	printf '%s\n' "$*" >"$CONTAINERS_DIR/unavailable"
	warn "containers disabled: $*"
}

containers_build() {
	local tp enroot_tgz pyxis_tgz
	mkdir -p "$CONTAINERS_DIR" "$CT_LOG"
	rm -f "$CONTAINERS_DIR/unavailable"
	if ! tp=$(third_party_dir); then
		containers_unavailable "Pyxis/Enroot sources missing: no ../shared/third_party next to $REPO (set SLURMDASH_THIRD_PARTY to the directory holding enroot-$ENROOT_VERSION.tar.gz and pyxis-$PYXIS_VERSION.tar.gz)"
		return 0
	fi
	enroot_tgz=$tp/enroot-$ENROOT_VERSION.tar.gz
	pyxis_tgz=$tp/pyxis-$PYXIS_VERSION.tar.gz
	local f
	for f in "$enroot_tgz" "$pyxis_tgz"; do
		[[ -s $f ]] || {
			containers_unavailable "Pyxis/Enroot sources missing: $f does not exist"
			return 0
		}
	done
	if [[ ! -x $ENROOT_STAGE/usr/local/bin/enroot ]]; then
		build_enroot "$enroot_tgz" || {
			containers_unavailable "building Enroot from $enroot_tgz failed (log: $CT_LOG/enroot-build.log)"
			return 0
		}
	fi
	if [[ ! -f $CONTAINERS_DIR/pyxis-src/Makefile ]]; then
		rm -rf "$CONTAINERS_DIR/pyxis-src"
		mkdir -p "$CONTAINERS_DIR/pyxis-src"
		tar -xzf "$pyxis_tgz" -C "$CONTAINERS_DIR/pyxis-src" --strip-components=1
	fi
}

# Enroot without its submodules (musl, makeself, libbsd, linux headers): against glibc
# and Debian's libbsd, with Debian's makeself, installed into a staging tree whose paths
# are then those of the final place (/usr/local), as Enroot's own `make dist` does.
build_enroot() {
	local tgz=$1 build=$CONTAINERS_DIR/enroot-build log
	log=$CT_LOG/enroot-build.log
	say "building Enroot $ENROOT_VERSION from $tgz (log: $log)"
	rm -rf "$build" "$ENROOT_STAGE"
	mkdir -p "$build"
	tar -xzf "$tgz" -C "$build" --strip-components=1
	sed -i '/^\$(DEPS) \$(UTILS): | deps$/d' "$build/Makefile"
	mkdir -p "$build/deps/dist/makeself/bin"
	ln -sfn /usr/bin/makeself "$build/deps/dist/makeself/bin/enroot-makeself"
	make -C "$build" FORCE_GLIBC=1 LDLIBS=-lbsd prefix=/usr/local \
		DESTDIR="$ENROOT_STAGE" install >"$log" 2>&1 || return 1
	sed -i "s;$ENROOT_STAGE;;g" "$ENROOT_STAGE/usr/local/bin/enroot" \
		"$ENROOT_STAGE/usr/local/etc/enroot/enroot.conf"
	rm -rf "$build"
}

# The Slurm version of the libslurm-dev installed in ROOT (e.g. 22.05.8-4+deb12u3).
slurm_dev_version() {
	dpkg-query --admindir="$1/var/lib/dpkg" -W -f='${Version}' libslurm-dev 2>/dev/null
}

# Runs a command inside ROOT (directly when ROOT is /).
in_root() {
	local root=$1
	shift
	if [[ $root == / ]]; then
		"$@"
	else
		chroot "$root" "$@"
	fi
}

# Pyxis for the Slurm in ROOT, cached per libslurm-dev version. Prints the .so path.
build_pyxis() {
	local root=$1 ver out tmp log
	ver=$(slurm_dev_version "$root") || {
		containers_unavailable "libslurm-dev is not installed in $root (Pyxis builds against it)"
		return 1
	}
	out=$CONTAINERS_DIR/pyxis-$PYXIS_VERSION-slurm-$ver/spank_pyxis.so
	if [[ ! -s $out ]]; then
		log=$CT_LOG/pyxis-build-$ver.log
		say "building Pyxis $PYXIS_VERSION for Slurm $ver in $root (log: $log)" >&2
		tmp=$(mktemp -d "${root%/}/tmp/slurmdash-pyxis.XXXXXX")
		cp -a "$CONTAINERS_DIR/pyxis-src/." "$tmp/"
		if ! in_root "$root" make -C "/${tmp#"${root%/}"/}" >"$log" 2>&1; then
			rm -rf "$tmp"
			containers_unavailable "building Pyxis for Slurm $ver failed (log: $log)"
			return 1
		fi
		install -D -m 644 "$tmp/spank_pyxis.so" "$out"
		rm -rf "$tmp"
	fi
	printf '%s' "$out"
}

render_enroot_conf() {
	cat <<'EOF'
# Dev-cluster settings (scripts/dev-cluster.d/containers.sh).
# The local registry speaks plain HTTP.
ENROOT_ALLOW_HTTP yes
# The dev nodes share one filesystem (and the users' homes), where a real cluster's nodes
# each have their own /run and local disk: without the node's name in these paths, the
# two tasks of a two-node step both create ~/.local/share/enroot/pyxis_<job>.<step>
# ("File already exists"). Each node runs in its own UTS namespace, so hostname is its name.
ENROOT_RUNTIME_PATH /run/enroot-dev/$(hostname)-user-$(id -u)
ENROOT_DATA_PATH /var/tmp/enroot-dev/$(hostname)-user-$(id -u)
EOF
}

render_pyxis_conf() {
	cat <<EOF
$MARKER
# Pyxis (srun --container-image), built by scripts/dev-cluster.d/containers.sh.
required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis
EOF
}

# Pyxis goes into CONFDIR/plugstack.conf.d/pyxis.conf; plugstack.conf (Debian ships one
# that includes that directory) is written only when absent.
write_plugstack() {
	local r=$1 confdir=$2 main
	main=$r$confdir/plugstack.conf
	install -d -m 755 "$r$confdir/plugstack.conf.d"
	render_pyxis_conf | write_file "$r$confdir/plugstack.conf.d/pyxis.conf" 644 || true
	if [[ ! -e $main ]]; then
		printf '%s\ninclude %s/plugstack.conf.d/*.conf\n' "$MARKER" "$confdir" | write_file "$main" 644 || true
	elif ! grep -qE "^[[:space:]]*include[[:space:]]+$confdir/plugstack.conf.d/" "$main"; then
		containers_unavailable "$main does not include $confdir/plugstack.conf.d/*.conf: add that line (or remove the file) so Pyxis is loaded"
		return 1
	fi
}

containers_install() {
	local root=$1 confdir=$2 so r
	[[ -e $CONTAINERS_DIR/unavailable ]] && return 0
	r=${root%/}
	so=$(build_pyxis "$root") || return 0
	install -D -m 644 "$so" "$r/usr/local/lib/slurm/spank_pyxis.so"
	cp -a "$ENROOT_STAGE/usr/local/." "$r/usr/local/"
	# Each dev node bind-mounts its own cgroup subtree over every hierarchy (node-init), so
	# /proc/self/mountinfo lists the shadowed whole-hierarchy mount first, and Enroot's
	# cgroup hook then mounts a path that does not exist there ("enroot-mount: failed to
	# mount: /sys/fs/cgroup/memory/slurmdash-...: No such file or directory"). Containers
	# on the dev cluster go without their own /sys/fs/cgroup view instead.
	rm -f "$r/usr/local/etc/enroot/hooks.d/10-cgroups.sh"
	# Enroot's helpers that build images need these (else "failed to set capabilities").
	setcap cap_sys_admin+pe "$r/usr/local/bin/enroot-mksquashovlfs"
	setcap cap_sys_admin,cap_mknod+pe "$r/usr/local/bin/enroot-aufs2ovlfs"
	render_enroot_conf | write_file "$r/usr/local/etc/enroot/enroot.conf.d/slurmdash-dev.conf" 644 || true
	install -d -m 1777 "$r/run/pyxis" "$r/run/enroot-dev" "$r/var/tmp/enroot-dev"
	write_plugstack "$r" "$confdir" || return 0
	say "Pyxis $PYXIS_VERSION and Enroot $ENROOT_VERSION installed in $root (Slurm $(slurm_dev_version "$root"))"
}

# --- registry ----------------------------------------------------------------------

REG_DIR=$CONTAINERS_DIR/registry

# render_registry_conf NAME PORT MODE. MODE "serve": on every address (the nodes reach it
# only as their controller address), read-only, so nothing on the network can push to
# it; "push": on 127.0.0.1 only, writable, while this script pushes the test images.
render_registry_conf() {
	local name=$1 port=$2 mode=$3 addr=0.0.0.0 readonly=true
	[[ $mode == push ]] && addr=127.0.0.1 readonly=false
	cat <<EOF
# docker-registry of the slurmdash dev cluster ($name, $mode), scripts/dev-cluster.d/containers.sh
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $REG_DIR/$name-data
  maintenance:
    readonly:
      enabled: $readonly
http:
  addr: $addr:$port
EOF
	if [[ $name == private ]]; then
		cat <<EOF
auth:
  htpasswd:
    realm: slurmdash-dev
    path: $REG_DIR/htpasswd
EOF
	fi
}

registry_ready() { curl -s -o /dev/null "http://127.0.0.1:$1/v2/"; }

# The private registry's user and password (created once), readable by the repo's owner
# for tests, which write ~/.config/enroot/.credentials (machine HOST login U password P).
ensure_registry_login() {
	local pw owner
	owner=$(stat -c '%u:%g' "$REPO")
	if [[ ! -s $REG_DIR/password ]]; then
		(umask 077 && head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20 \
			>"$REG_DIR/password")
	fi
	pw=$(<"$REG_DIR/password")
	htpasswd -Bbn "$REGISTRY_USER" "$pw" 2>/dev/null | sed '/^$/d' >"$REG_DIR/htpasswd.new"
	# bcrypt salts differ each run: keep the old file while it still matches.
	if [[ -s $REG_DIR/htpasswd ]] && htpasswd -vb "$REG_DIR/htpasswd" "$REGISTRY_USER" "$pw" >/dev/null 2>&1; then
		rm -f "$REG_DIR/htpasswd.new"
	else
		mv -f "$REG_DIR/htpasswd.new" "$REG_DIR/htpasswd"
	fi
	printf '%s\n' "$REGISTRY_USER" | write_file "$REG_DIR/user" 600 || true
	chown "$owner" "$REG_DIR/user" "$REG_DIR/password"
}

# registry_run NAME MODE: runs registry-NAME in MODE (see render_registry_conf),
# restarting it only when it runs in the other mode or its config changed.
registry_run() {
	local name=$1 mode=$2 port=$REGISTRY_PORT conf changed=1 where
	[[ $name == private ]] && port=$REGISTRY_PRIVATE_PORT
	conf=$REG_DIR/$name-$mode.yml
	render_registry_conf "$name" "$port" "$mode" | write_file "$conf" 600 || changed=0
	if is_alive "registry-$name"; then
		if ((changed == 0)) && [[ $(cat "$CT_RUN/registry-$name.mode" 2>/dev/null) == "$mode" ]]; then
			return 0
		fi
		stop_daemon "registry-$name"
	fi
	check_port "registry-$name" "$port"
	where="port $port on every address, read-only: 127.0.0.1 here, \$CTL_ADDR from the nodes"
	[[ $mode == push ]] && where="127.0.0.1:$port, writable, for pushing the test images"
	say "starting registry-$name ($where)"
	start_daemon "registry-$name" docker-registry serve "$conf"
	printf '%s\n' "$mode" >"$CT_RUN/registry-$name.mode"
	wait_ready "registry-$name" 20 "http://127.0.0.1:$port/v2/" registry_ready "$port"
}

registry_up() {
	local name RUN=$CT_RUN LOG=$CT_LOG
	mkdir -p "$REG_DIR" "$CT_RUN" "$CT_LOG"
	chmod 711 "$REG_DIR"
	ensure_registry_login
	for name in public private; do
		mkdir -p "$REG_DIR/$name-data"
		registry_run "$name" serve
	done
	test_images_present && return 0
	for name in public private; do registry_run "$name" push; done
	# (in a subshell: a failed image build disables the container tests, not `up`)
	if ! (build_test_images); then
		containers_unavailable "building the test images failed (log: $CT_LOG/images-build.log)"
	fi
	for name in public private; do registry_run "$name" serve; done
}

registry_down() {
	local RUN=$CT_RUN LOG=$CT_LOG
	stop_daemon registry-private
	stop_daemon registry-public
}

# --- test images -------------------------------------------------------------------

IMG_DIR=$CONTAINERS_DIR/images

# Unpacks Debian packages (downloaded once into $IMG_DIR/debs) into a root filesystem.
unpack_debs() {
	local rootfs=$1 p deb
	shift
	mkdir -p "$IMG_DIR/debs"
	for p in "$@"; do
		deb=$(compgen -G "$IMG_DIR/debs/${p}_*.deb" | head -n 1 || true)
		if [[ -z $deb ]]; then
			(cd "$IMG_DIR/debs" && host_apt download -q "$p" >>"$CT_LOG/images-build.log" 2>&1) ||
				die "apt-get download $p failed (building the test images; log $CT_LOG/images-build.log)"
			deb=$(compgen -G "$IMG_DIR/debs/${p}_*.deb" | head -n 1)
		fi
		dpkg-deb -x "$deb" "$rootfs"
	done
}

# A busybox root filesystem: sh and the usual tools as busybox applets, no bash.
make_busybox_rootfs() {
	local rootfs=$1 id=$2 a
	rm -rf "$rootfs"
	mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,root,proc,sys,dev,lustre}
	chmod 1777 "$rootfs/tmp"
	unpack_debs "$rootfs" busybox-static
	for a in $("$rootfs/bin/busybox" --list); do
		[[ -e $rootfs/bin/$a ]] || ln -s busybox "$rootfs/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\n' >"$rootfs/etc/group"
	cat >"$rootfs/etc/os-release" <<EOF
PRETTY_NAME="slurmdash test image $id"
NAME="slurmdash-$id"
ID=slurmdash-$id
VERSION_ID="1.0"
EOF
}

# oci:DIR:TAG from a root filesystem (umoci), with PATH in its config.
make_oci() {
	local rootfs=$1 oci=$2 tag=$3 bundle=$IMG_DIR/bundle
	[[ -d $oci ]] || umoci init --layout "$oci"
	umoci new --image "$oci:$tag"
	rm -rf "$bundle"
	umoci unpack --image "$oci:$tag" "$bundle"
	cp -a "$rootfs/." "$bundle/rootfs/"
	umoci repack --image "$oci:$tag" "$bundle"
	umoci config --image "$oci:$tag" --config.cmd /bin/sh \
		--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	rm -rf "$bundle"
}

# skopeo push in Docker v2 schema 2 (the registry answers an OCI manifest with 404 when
# Enroot asks for it).
push_image() {
	local src=$1 dest=$2
	shift 2
	skopeo copy -q --format v2s2 --dest-tls-verify=false "$@" "oci:$src" "docker://$dest" \
		>>"$CT_LOG/images-build.log" 2>&1 || die "skopeo copy oci:$src docker://$dest failed (log $CT_LOG/images-build.log)"
}

image_present() {
	local port=$1 repo=$2 tag=$3
	shift 3
	curl -sf -o /dev/null "$@" -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
		"http://127.0.0.1:$port/v2/$repo/manifests/$tag"
}

test_images_present() {
	local pw
	pw=$(<"$REG_DIR/password")
	image_present "$REGISTRY_PORT" team/tiny 1.0 && image_present "$REGISTRY_PORT" team/tiny latest &&
		image_present "$REGISTRY_PORT" team/py 1.0 &&
		image_present "$REGISTRY_PRIVATE_PORT" private/tiny 1.0 -u "$REGISTRY_USER:$pw" &&
		[[ -s $IMAGES_DIR/tiny.sqsh ]]
}

build_test_images() {
	local pw oci=$IMG_DIR/oci
	pw=$(<"$REG_DIR/password")
	say "building the test images (busybox; busybox+bash+python3) and pushing them to 127.0.0.1:$REGISTRY_PORT and :$REGISTRY_PRIVATE_PORT"
	mkdir -p "$IMG_DIR"
	rm -rf "$oci"
	make_busybox_rootfs "$IMG_DIR/tiny-rootfs" tiny
	make_oci "$IMG_DIR/tiny-rootfs" "$oci" tiny
	make_busybox_rootfs "$IMG_DIR/py-rootfs" py
	unpack_debs "$IMG_DIR/py-rootfs" bash libtinfo6 libc6 python3.11-minimal \
		libpython3.11-minimal libexpat1 zlib1g libssl3
	ln -sfn python3.11 "$IMG_DIR/py-rootfs/usr/bin/python3"
	# usrmerge: the dynamic loader and libraries live under /usr/lib in Debian 12's debs.
	[[ -e $IMG_DIR/py-rootfs/lib ]] || ln -s usr/lib "$IMG_DIR/py-rootfs/lib"
	[[ -e $IMG_DIR/py-rootfs/lib64 ]] || ln -s usr/lib64 "$IMG_DIR/py-rootfs/lib64"
	make_oci "$IMG_DIR/py-rootfs" "$oci" py
	push_image "$oci:tiny" "127.0.0.1:$REGISTRY_PORT/team/tiny:1.0"
	push_image "$oci:tiny" "127.0.0.1:$REGISTRY_PORT/team/tiny:latest"
	push_image "$oci:py" "127.0.0.1:$REGISTRY_PORT/team/py:1.0"
	push_image "$oci:tiny" "127.0.0.1:$REGISTRY_PRIVATE_PORT/private/tiny:1.0" --dest-creds "$REGISTRY_USER:$pw"
	install -d -m 755 "$IMAGES_DIR"
	mksquashfs "$IMG_DIR/tiny-rootfs" "$IMAGES_DIR/tiny.sqsh.new" -noappend -quiet -all-root \
		>>"$CT_LOG/images-build.log" 2>&1 || die "mksquashfs of the tiny image failed (log $CT_LOG/images-build.log)"
	chmod 644 "$IMAGES_DIR/tiny.sqsh.new"
	mv -f "$IMAGES_DIR/tiny.sqsh.new" "$IMAGES_DIR/tiny.sqsh"
	rm -rf "$IMG_DIR/tiny-rootfs" "$IMG_DIR/py-rootfs"
}

# The 2FA sshd comes with the registry: one `. containers.sh` brings both.
# shellcheck source=totp.sh
. "${BASH_SOURCE[0]%/*}/totp.sh"
