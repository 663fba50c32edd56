# shellcheck shell=bash
# Login shells and dotfiles of the test users. SHELL_USERS (scripts/dev-cluster) are set
# up the way real people's accounts are, so that tests meet what a login shell and its
# dotfiles do to an ssh command: lines on stdout and stderr before the command's own
# output, shells that are not POSIX (tcsh, fish), Slurm's output variables set to odd
# values. Sourced by scripts/dev-cluster, never run.
#
# The homes are this machine's /home, which every chroot sees: one set of dotfiles serves
# every version. The shells must exist here and in each chroot (setup.sh's PACKAGES,
# chroot.sh's CHROOT_EXTRA_PACKAGES): sshd refuses a user whose shell is missing.

# The same paths in every Debian release used here (/bin is merged into /usr/bin; ksh is
# the alternative that ksh93u+m installs).
declare -A LOGIN_SHELL=([sduser]=/bin/bash [sdother]=/bin/bash
	[sdtcsh]=/usr/bin/tcsh [sdfish]=/usr/bin/fish [sdzsh]=/usr/bin/zsh [sdksh]=/usr/bin/ksh
	[sddash]=/bin/sh [sdbashrc]=/bin/bash [sdvars]=/bin/bash [sdsite]=/bin/bash
	[sdbudget1]=/bin/bash [sdbudget2]=/bin/bash)

login_shell() {
	[[ -n ${LOGIN_SHELL[$1]:-} ]] || die "no login shell set for test user $1 (LOGIN_SHELL in accounts.sh)"
	printf '%s' "${LOGIN_SHELL[$1]}"
}

# On Slurm 24.11, sduser (the account every test uses unless it says otherwise) logs in
# with tcsh and a ~/.cshrc that prints on both streams: the whole suite runs there through
# a login shell that is not POSIX and a dotfile that talks, and as plain bash on 22.05 and
# 26.05. Only the chroot's /etc/passwd says so; bash never reads the shared ~/.cshrc.
TCSH_SDUSER_ON=24.11
chroot_login_shell() {
	if [[ $1 == sduser && $VER == "$TCSH_SDUSER_ON" ]]; then
		printf /usr/bin/tcsh
	else
		login_shell "$1"
	fi
}

# The dotfile (path under the home) that a test user's shell reads for `SHELL -c CMD`, or
# nothing: ksh93 reads $ENV (by default ~/.kshrc) and dash reads $ENV only when
# interactive, so sdksh and sddash get none of ours (what one did would never be seen
# over ssh). sdksh keeps the ~/.kshrc that useradd copied from /etc/skel (ksh93u+m puts
# it there): it returns at once in a shell that is not interactive.
dotfile_of() {
	case $1 in
	sdtcsh | sduser) printf .cshrc ;;
	sdfish) printf .config/fish/config.fish ;;
	sdzsh) printf .zshenv ;;
	sdbashrc | sdvars | sdsite) printf .bashrc ;;
	esac
}

# The dotfile's text. Debian's bash reads ~/.bashrc for commands run by sshd too
# (SSH_SOURCE_BASHRC), so what comes above its interactive check reaches every ssh
# command, as in many real ones. csh: no `!` (history) and no quote in comments.
render_dotfile() {
	local head
	head="# ~/$(dotfile_of "$1") of $1, written by slurmdash scripts/dev-cluster (accounts.sh)."
	case $1 in
	sdtcsh | sduser)
		cat <<EOF
$head
# tcsh reads it in every shell, ssh commands included, and it talks on both streams.
echo "*** Welcome to the cluster (tcsh) ***"
echo "note: quota 80% used" > /dev/stderr
EOF
		;;
	sdfish | sdzsh)
		cat <<EOF
$head
# ${1#sd} reads it in every shell, ssh commands included, and it talks on both streams.
echo "*** Welcome to the cluster (${1#sd}) ***"
echo "note: quota 80% used" >&2
EOF
		;;
	sdbashrc)
		cat <<EOF
$head
# A greeting above the interactive check: every ssh command prints it.
echo "*** Welcome to the cluster (bash) ***"
echo "note: quota 80% used" >&2
EOF
		render_bashrc_tail
		;;
	sdvars)
		cat <<EOF
$head
# Slurm's output variables, not at their defaults, above the interactive check: every
# ssh command sees them (explicit command-line options win over most of them).
export SLURM_TIME_FORMAT=relative
export SQUEUE_FORMAT='%i %j'
export SQUEUE_FORMAT2='jobid:10,name:5'
export SQUEUE_SORT=-t
export SQUEUE_ALL=1
export SQUEUE_ARRAY=1
export SQUEUE_STATES=RUNNING
export SQUEUE_USERS=root
export SQUEUE_PARTITION=cpu
export SQUEUE_ACCOUNT=vision
export SQUEUE_QOS=normal
export SACCT_FORMAT=jobid,state
export SINFO_FORMAT='%P'
export SINFO_SORT=-P
export SCANCEL_INTERACTIVE=1
export SCANCEL_VERBOSE=1
export SLURM_BITSTR_LEN=3
# And sbatch input variables, which win over a script's #SBATCH lines: the launch's own
# values must win (a job named otherwise would miss its slurm-logs/NAME-ID directory).
export SBATCH_TIMELIMIT=7
export SBATCH_JOB_NAME=from-bashrc
EOF
		render_bashrc_tail
		;;
	sdsite)
		cat <<EOF
$head
# Where this account's Slurm is, as \`module load slurm\` sets it at sites that serve
# several clusters from one login node: the default /etc/slurm/slurm.conf is not for it
# (it cannot read that file, see site_conf in configs.sh).
export SLURM_CONF=$SITE_CONF_IN
EOF
		render_bashrc_tail
		;;
	esac
}

# The rest of those .bashrc files, as Debian's /etc/skel/.bashrc begins.
render_bashrc_tail() {
	cat <<'EOF'

# If not running interactively, don't do anything
case $- in
*i*) ;;
*) return ;;
esac
PS1='\u@\h:\w\$ '
EOF
}

# Writes each SHELL_USERS dotfile (only when its text changed), owned by the user, with
# any directory on its way that is missing (~/.config/fish).
ensure_dotfiles() {
	local u f grp home d part
	local -a parts
	for u in sduser "${SHELL_USERS[@]}"; do
		f=$(dotfile_of "$u")
		[[ -n $f ]] || continue
		grp=$(id -gn "$u")
		home=$(getent passwd "$u" | cut -d: -f6)
		d=$home
		parts=()
		if [[ $f == */* ]]; then
			IFS=/ read -r -a parts <<<"${f%/*}"
		fi
		for part in "${parts[@]}"; do
			d+=/$part
			[[ -d $d ]] || install -d -m 755 -o "$u" -g "$grp" "$d"
		done
		if render_dotfile "$u" | write_file "$home/$f" 644; then
			chown "$u:$grp" "$home/$f"
			say "wrote ~$u/$f"
		fi
	done
}
