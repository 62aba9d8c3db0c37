#!/usr/bin/env bash
# Delivery throughput on loopback (README "Delivering finished photos"): `photofinish deliver` of
# one finished batch (8 photos of noise, finished at full size: some 30 MB of JPEGs) to SFTP
# (OpenSSH's sshd) and to WebDAV (Apache with mod_dav), each against `curl -T` of the same files
# over one connection, side by side with farm-bench (A B A B …, ratios pair by pair).
# photofinish also writes each file under a temporary name, renames it, and reads it back to
# hash it (verified: sha256; the read-back of a file on a second connection while the next one
# is written); curl -T only sends. So each protocol is also timed against curl -T followed by
# curl reading the same files back (the bytes photofinish moves, one after the other): what the
# check itself costs on this machine, where both ends of the connection share its cores.
# Needs root (sshd logs root in with a key;
# Apache runs as nobody), sshd, apache2 (scripts/bootstrap), ImageMagick's convert
# (scripts/bootstrap --bench) and farm-bench.
# It ends with a summary: each pair's median wall ratio, the two rows of each protocol together.
#   bench/deliver/run.sh [RUNS]      (PF_BIN: the photofinish binary, default .build/release/photofinish)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
runs=${1:-5}
bin=$(readlink -f "${PF_BIN:-.build/release/photofinish}")
work=$(mktemp -d /tmp/pf-bench-deliver.XXXXXX)
chmod 755 "$work"  # Apache runs as nobody: it must reach its folder
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cleanup() {
  [[ -f $work/sshd.pid ]] && kill "$(cat "$work/sshd.pid")" 2>/dev/null || true
  [[ -n ${apache:-} ]] && kill -9 "$apache" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The batch: photofinish run of 8 noise photos into a hot folder's out/.
root=$work/hot
mkdir -p "$root"/{drop,out,originals,failed,.work} "$work/photos" "$work/templates" "$work/sftp" "$work/dav"
for n in 1 2 3 4 5 6 7 8; do convert -size 3000x2000 xc:gray +noise Random -quality 92 "$work/photos/P$n.jpg"; done
echo '{ version: 1, output: { format: "jpeg", quality: 92 } }' > "$work/templates/full.json5"
"$bin" run --template "$work/templates/full.json5" --out "$root/out" "$work/photos" >/dev/null
batch=$(ls "$root/out")
files=$(ls "$root"/out/"$batch"/P*.jpg | paste -sd, -)
bytes=$(cat "$root"/out/"$batch"/P*.jpg | wc -c)

# sshd on a spare port, root logging in with a key; the SFTP server as root (no setpriv: the bench's folders).
ssh_port=$(port)
ssh-keygen -q -t ed25519 -N '' -f "$work/host-key"
ssh-keygen -q -t ed25519 -N '' -f "$work/user-key"
cp "$work/user-key.pub" "$work/authorized_keys"
cat > "$work/sshd_config" <<CONF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $work/host-key
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile $work/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
CONF
mkdir -p /run/sshd
/usr/sbin/sshd -f "$work/sshd_config" -E "$work/sshd.log"
echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1-2 "$work/host-key.pub")" > "$work/known_hosts"

# Apache with mod_dav, one process (-X), Basic login.
dav_port=$(port)
m=/usr/lib/apache2/modules
htpasswd -cbB "$work/htpasswd" bench bench-secret 2>/dev/null
chown -R 65534:65534 "$work/dav"; mkdir -p "$work/lock"; chown 65534:65534 "$work/lock"; chmod 644 "$work/htpasswd"
cat > "$work/httpd.conf" <<CONF
ServerRoot $work
DefaultRuntimeDir $work
PidFile $work/httpd.pid
Listen 127.0.0.1:$dav_port
ServerName 127.0.0.1
User nobody
Group nogroup
ErrorLog $work/apache.log
LoadModule mpm_event_module $m/mod_mpm_event.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule authz_user_module $m/mod_authz_user.so
LoadModule authn_core_module $m/mod_authn_core.so
LoadModule authn_file_module $m/mod_authn_file.so
LoadModule auth_basic_module $m/mod_auth_basic.so
LoadModule alias_module $m/mod_alias.so
LoadModule dav_module $m/mod_dav.so
LoadModule dav_fs_module $m/mod_dav_fs.so
DavLockDB $work/lock/davlock
Alias /dav $work/dav
<Directory $work/dav>
  Dav On
  AuthType Basic
  AuthName bench
  AuthUserFile $work/htpasswd
  Require valid-user
</Directory>
CONF
/usr/sbin/apache2 -f "$work/httpd.conf" -X & apache=$!
disown "$apache"  # killed by cleanup: no "Killed" line from bash
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$dav_port/" && break; sleep 0.1; done
curl -s -o /dev/null -u bench:bench-secret -X MKCOL "http://127.0.0.1:$dav_port/dav/curl/"

umask 077
cat > "$work/credentials.json5" <<CONF
{ sftp: { user: "root", privateKey: "$work/user-key" }, dav: { user: "bench", password: "bench-secret" } }
CONF
cat > "$work/photofinish.json5" <<CONF
{ templatesDir: "templates", inboxes: [ { name: "bench", root: "$root", template: "full" } ],
  credentials: "$work/credentials.json5",
  deliver: [ { name: "sftp", to: "sftp://root@127.0.0.1:$ssh_port$work/sftp/", credentials: "sftp", knownHosts: "$work/known_hosts" },
             { name: "dav", to: "webdav://127.0.0.1:$dav_port/dav/pf/", credentials: "dav" } ] }
CONF
umask 022
echo "batch $batch: 8 files, $bytes bytes; load: $(cut -d' ' -f1-3 /proc/loadavg)"
sftp_curl="curl -s -k --key $work/user-key --pubkey $work/user-key.pub"
sftp_send="$sftp_curl -T {$files} sftp://root@127.0.0.1:$ssh_port$work/sftp-curl/ --ftp-create-dirs"
dav_send="curl -s -o /dev/null -u bench:bench-secret -T {$files} http://127.0.0.1:$dav_port/dav/curl/"
# The same files read back, each to /dev/null.
sftp_read="$sftp_curl" dav_read="curl -s -u bench:bench-secret"
for f in "$root"/out/"$batch"/P*.jpg; do
  sftp_read+=" sftp://root@127.0.0.1:$ssh_port$work/sftp-curl/${f##*/} -o /dev/null"
  dav_read+=" http://127.0.0.1:$dav_port/dav/curl/${f##*/} -o /dev/null"
done
deliver() { echo "$bin deliver $root $batch --to $1 --config $work/photofinish.json5"; }
# Each pair's output is kept for the summary: its median wall ratio (A/B) and medians.
bench() {  # NAME B-COMMAND DESTINATION
  echo "== $1"
  farm-bench -n "$runs" --timeout 900 --vs "$2" -- $(deliver "$3") | tee "$work/$3-${#pairs[@]}.txt"
  pairs+=("$1|$work/$3-${#pairs[@]}.txt")
}
pairs=()
bench "SFTP: photofinish deliver (A) vs curl -T (B)" "$sftp_send" sftp
bench "SFTP: photofinish deliver (A) vs curl -T, then curl reading the files back (B)" "sh -c '$sftp_send && $sftp_read'" sftp
bench "WebDAV: photofinish deliver (A) vs curl -T (B)" "$dav_send" dav
bench "WebDAV: photofinish deliver (A) vs curl -T, then curl reading the files back (B)" "sh -c '$dav_send && $dav_read'" dav
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The two rows of each protocol side by side. Against curl -T the goal is a wall ratio of at most
# 1.11 (throughput at least 0.9x); photofinish also reads every file back to verify it, which
# curl -T does not: the second row times what the same bytes moved cost curl.
echo "== Summary: median wall, photofinish (A) / curl (B), $runs pairs each"
for pair in "${pairs[@]}"; do
  name=${pair%%|*} file=${pair#*|}
  ratio=$(awk '$1 == "A/B" && $2 == "wall" { print $4 }' "$file")
  a=$(awk '$1 == "A" && $2 == "wall" { print $5 }' "$file") b=$(awk '$1 == "B" && $2 == "wall" { print $5 }' "$file")
  printf '%-85s %6s  (A %ss, B %ss)\n' "$name" "$ratio" "$a" "$b"
done
