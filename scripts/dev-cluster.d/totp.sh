# shellcheck shell=bash
# A second sshd for the dev cluster that asks for a key AND a one-time code (TOTP), the
# way many clusters' login nodes do. Sourced by scripts/dev-cluster, never run.
#
#   totp_up     create sduser's TOTP secret (once), the PAM service, the sshd config, the
#               client alias and a slurmdash config, and start the sshd (127.0.0.1:22099)
#   totp_down   stop that sshd
#
# The sshd reaches PAM under its own service name (OpenSSH names the PAM service after
# the program, so it runs from a symlink called sshd-2fa and /etc/pam.d/sshd-2fa applies):
# the system's /etc/pam.d/sshd is never touched. Codes: see totp_code below, or
#   oathtool --totp -b "$(cat .dev-cluster/totp/sduser.secret)"

TOTP_PORT=22099
TOTP_ALIAS=slurmdash-dev-2fa
TOTP_USER=sduser
TOTP_DIR=$DC/totp
TOTP_PAM_SERVICE=sshd-2fa
# Its pid file and log: one 2FA sshd for every Slurm version (it logs into this
# machine, whose Slurm clients are those of 22.05).
TOTP_RUN=$TOTP_DIR/run
TOTP_LOG=$TOTP_DIR/log
TOTP_SSH_DIR=$DC/ssh
PACKAGES+=(libpam-google-authenticator oathtool)

render_totp_pam() {
	cat <<'EOF'
# PAM service of the slurmdash dev cluster's 2FA sshd (scripts/dev-cluster.d/totp.sh).
# The key is checked by sshd itself; PAM asks only for the one-time code.
auth     required  pam_google_authenticator.so
account  required  pam_unix.so
session  required  pam_unix.so
EOF
}

render_totp_sshd_config() {
	cat <<EOF
# 2FA sshd of the slurmdash dev cluster (scripts/dev-cluster.d/totp.sh): key, then a code.
Port $TOTP_PORT
ListenAddress 127.0.0.1
HostKey ${HOST_KEY:-$DC/sshd/ssh_host_ed25519_key}
PidFile $TOTP_RUN/sshd-2fa.daemon.pid
AllowUsers $TOTP_USER
PermitRootLogin no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication yes
UsePAM yes
AuthenticationMethods publickey,keyboard-interactive
MaxAuthTries 6
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
}

# No BatchMode here: the whole point is a prompt. Tests that must not prompt pass
# -o BatchMode=yes themselves.
render_totp_client_config() {
	cat <<EOF
Host $TOTP_ALIAS
    HostName 127.0.0.1
    Port $TOTP_PORT
    User $TOTP_USER
    IdentityFile ${CLIENT_KEY:-$DC/ssh/id_ed25519}
    IdentitiesOnly yes
    UserKnownHostsFile $TOTP_SSH_DIR/known_hosts_2fa
    StrictHostKeyChecking yes
    PreferredAuthentications publickey,keyboard-interactive
    ConnectTimeout 5
EOF
}

render_totp_slurmdash_toml() {
	cat <<EOF
default_cluster = "dev2fa"

# No slurmctld RPC budget: the tests wait for screens with deadlines (docs/testing.md).
[poll]
max_rpcs_per_minute = 0

[clusters.dev2fa]
hosts = ["$TOTP_ALIAS"]
ssh_config = "$TOTP_SSH_DIR/config-2fa"
user = "$TOTP_USER"
interactive_login = true
partition = "short"
account = "research"
results_root = "/lustre/fsw/$TOTP_USER/results"
EOF
}

# The secret: 16 base32 characters (80 bits) from /dev/urandom, kept in
# $TOTP_DIR/<user>.secret (readable by the repo's owner, for tests) and in the user's
# ~/.google_authenticator (what the PAM module reads, as that user). No DISALLOW_REUSE
# and no RATE_LIMIT: tests log in several times within one 30 s step.
ensure_totp_secret() {
	local u=$TOTP_USER home secret owner
	owner=$(stat -c '%u:%g' "$REPO")
	install -d -m 755 "$TOTP_DIR"
	if [[ ! -s $TOTP_DIR/$u.secret ]]; then
		(umask 077 && head -c 64 /dev/urandom | base32 | tr -dc 'A-Z2-7' | head -c 16 \
			>"$TOTP_DIR/$u.secret")
		say "created a TOTP secret for $u: $TOTP_DIR/$u.secret"
	fi
	chmod 600 "$TOTP_DIR/$u.secret"
	chown "$owner" "$TOTP_DIR/$u.secret"
	secret=$(<"$TOTP_DIR/$u.secret")
	home=$(getent passwd "$u" | cut -d: -f6)
	if printf '%s\n" TOTP_AUTH\n" WINDOW_SIZE 3\n' "$secret" |
		write_file "$home/.google_authenticator" 600; then
		chown "$u:$(id -gn "$u")" "$home/.google_authenticator"
	fi
}

# The code valid now for the test user (what a person would read off their phone).
totp_code() { oathtool --totp -b "$(<"$TOTP_DIR/$TOTP_USER.secret")"; }

totp_up() {
	local owner hostpub RUN=$TOTP_RUN LOG=$TOTP_LOG
	owner=$(stat -c '%u:%g' "$REPO")
	mkdir -p "$TOTP_RUN" "$TOTP_LOG"
	ensure_totp_secret
	render_totp_pam | write_file "/etc/pam.d/$TOTP_PAM_SERVICE" 644 || true
	ln -sfn /usr/sbin/sshd "$TOTP_DIR/$TOTP_PAM_SERVICE"
	local changed=0
	render_totp_sshd_config | write_file "$DC/sshd/sshd_config_2fa" 600 && changed=1
	render_totp_client_config | write_file "$TOTP_SSH_DIR/config-2fa" 600 || true
	read -r -a hostpub <"${HOST_KEY:-$DC/sshd/ssh_host_ed25519_key}.pub"
	printf '[127.0.0.1]:%s %s %s\n' "$TOTP_PORT" "${hostpub[0]}" "${hostpub[1]}" |
		write_file "$TOTP_SSH_DIR/known_hosts_2fa" 600 || true
	render_totp_slurmdash_toml | write_file "$DC/slurmdash-2fa.toml" 644 || true
	chown "$owner" "$TOTP_SSH_DIR/config-2fa" "$TOTP_SSH_DIR/known_hosts_2fa" "$DC/slurmdash-2fa.toml"
	if ((changed)) && is_alive sshd-2fa; then
		say "config of sshd-2fa changed: restarting it"
		stop_daemon sshd-2fa
	fi
	is_alive sshd-2fa && return 0
	check_port sshd-2fa "$TOTP_PORT"
	/usr/sbin/sshd -t -f "$DC/sshd/sshd_config_2fa" >>"$(log_file sshd-2fa)" 2>&1 ||
		die_daemon sshd-2fa "sshd -t rejected $DC/sshd/sshd_config_2fa"
	say "starting sshd-2fa (127.0.0.1:$TOTP_PORT, key + one-time code; alias $TOTP_ALIAS in $TOTP_SSH_DIR/config-2fa)"
	# The absolute path of the symlink: sshd re-executes itself from argv[0].
	start_daemon sshd-2fa "$TOTP_DIR/$TOTP_PAM_SERVICE" -D -e -f "$DC/sshd/sshd_config_2fa"
	wait_ready sshd-2fa 15 "127.0.0.1:$TOTP_PORT listening" totp_listening
}

totp_listening() { ss -Hltn "sport = :$TOTP_PORT" | grep -q .; }

totp_down() {
	local RUN=$TOTP_RUN LOG=$TOTP_LOG
	stop_daemon sshd-2fa
}
