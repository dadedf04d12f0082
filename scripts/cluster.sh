#!/usr/bin/env bash
# Several Tessera instances behind HAProxy on loopback (issue 23; docs/deployment.md): PostgreSQL
# (started with pg_ctlcluster when it is down), a Redis of the rig's own, N `tessera serve` on
# consecutive ports sharing one database, one REDIS_URL and one master key, and HAProxy in front
# with deploy/haproxy.cfg. Each instance runs with deploy/tessera.toml (the file the deployment
# guide shows) and the environment file the guide's systemd unit reads.
#
#   bash scripts/cluster.sh start  [--instances N] [--port BASE] [--run-dir DIR] [--config FILE]
#                                  [--database-url URL] [--redis-url URL] [--bin PATH]
#   bash scripts/cluster.sh status [--run-dir DIR]
#   bash scripts/cluster.sh stop   [--run-dir DIR]
#   bash scripts/cluster.sh kill I [--run-dir DIR]             SIGKILL instance I (1..N)
#   bash scripts/cluster.sh start-instance I [--run-dir DIR]   start it again, wait until ready
#   bash scripts/cluster.sh restart I [--run-dir DIR]    drained SIGTERM and start (docs/deployment.md)
#   bash scripts/cluster.sh rolling-restart [--run-dir DIR]     restart 1..N, one at a time
#   bash scripts/cluster.sh redis-stop|redis-start [--run-dir DIR]   the rig's own Redis only
#
# Ports: HAProxy's front on BASE (default 18080), instance I on BASE+I, HAProxy's stats page on
# BASE+N+1, the rig's Redis on BASE+N+2. Run dir (default $TMPDIR/tessera-cluster): tessera.env
# (DATABASE_URL, REDIS_URL, TESSERA_MASTER_KEY, TESSERA_CONFIG; mode 600), haproxy.cfg, one data
# dir, log and pid file per instance, haproxy.log, redis.log. Without --database-url a throwaway
# database is created on 127.0.0.1:5432 and dropped by `stop`. Without --redis-url the rig runs
# its own redis-server (no persistence, noeviction) so that a test can stop it; with one, keys go
# under a prefix of their own. The master key is TESSERA_MASTER_KEY when set, else a new one.
# The binary: --bin, TESSERA_BIN, else the debug build (built here). Extra environment (for
# instance TESSERA_WORKERS=0, TESSERA_PAYMENT_HOLD_SECONDS) is passed on to every instance.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

usage() {
  sed -n '/^#   bash/p' "$0" | sed 's/^# *//' >&2
  exit 2
}

cmd=${1:-}
[ -n "$cmd" ] || usage
shift
n_opt=""
port_opt=""
run_dir=${TESSERA_CLUSTER_DIR:-${TMPDIR:-/tmp}/tessera-cluster}
config_opt=""
database_url_opt=""
redis_url_opt=""
bin_opt=${TESSERA_BIN:-}
index=""
while [ $# -gt 0 ]; do
  case $1 in
    --instances) n_opt=$2; shift 2 ;;
    --port) port_opt=$2; shift 2 ;;
    --run-dir) run_dir=$2; shift 2 ;;
    --config) config_opt=$2; shift 2 ;;
    --database-url) database_url_opt=$2; shift 2 ;;
    --redis-url) redis_url_opt=$2; shift 2 ;;
    --bin) bin_opt=$2; shift 2 ;;
    [0-9]*) index=$1; shift ;;
    *) usage ;;
  esac
done
mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
state=$run_dir/cluster.env

say() { echo "cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# A process counts as gone once it has exited, even while nobody has reaped it yet (a zombie):
# instances started by an earlier invocation of this script are no child of this one.
alive() {
  local pid=$1 st
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)
  [ "$st" != Z ]
}
# The pid in a pid file, only while it is still the program this script started there: after a
# crash or a reboot the number may belong to someone else's process, which must not be signalled.
pid_of() {
  local pid prog cmd
  pid=$(cat "$run_dir/$1.pid" 2>/dev/null) || return 0
  case $1 in
    inst*) prog="${BIN:-tessera} serve" ;;
    haproxy) prog="$run_dir/haproxy.cfg" ;;
    redis) prog=redis-server ;;
  esac
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 0
  case $cmd in *"$prog"*) echo "$pid" ;; esac
}

http_status() { curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null || true; }

load_state() {
  [ -f "$state" ] || die "no cluster in $run_dir (start one first)"
  # shellcheck disable=SC1090
  . "$state"
}

start_instance() {
  local i=$1 port=$((BASE_PORT + $1))
  alive "$(pid_of "inst$i")" && die "instance $i is already running"
  mkdir -p "$run_dir/inst$i"
  (
    set -a
    # shellcheck disable=SC1091
    . "$run_dir/tessera.env"
    set +a
    TESSERA_LISTEN=127.0.0.1:$port TESSERA_DATA_DIR=$run_dir/inst$i exec "$BIN" serve
  ) >>"$run_dir/inst$i.log" 2>&1 &
  echo $! >"$run_dir/inst$i.pid"
  local pid=$!
  for _ in $(seq 1 600); do
    [ "$(http_status "http://127.0.0.1:$port/readyz")" = 200 ] && return 0
    if ! alive "$pid"; then
      tail -n 20 "$run_dir/inst$i.log" >&2
      die "instance $i exited before it was ready (log: $run_dir/inst$i.log)"
    fi
    sleep 0.05
  done
  die "instance $i not ready after 30 s (log: $run_dir/inst$i.log)"
}

stop_pid() {
  local pid=$1 name=$2
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  # SIGTERM drains (D16.22); a server still busy after 15 s is killed.
  for _ in $(seq 1 150); do
    alive "$pid" || return 0
    sleep 0.1
  done
  say "$name did not stop within 15 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

start_redis() {
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --maxmemory-policy noeviction --dir "$run_dir" --daemonize yes \
    --pidfile "$run_dir/redis.pid" --logfile "$run_dir/redis.log" >/dev/null
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  die "redis-server on port $REDIS_PORT did not answer (log: $run_dir/redis.log)"
}

stop_redis() {
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  stop_pid "$(pid_of redis)" redis
}

# HAProxy's file with this rig's addresses; everything else as deploy/haproxy.cfg has it.
haproxy_config() {
  awk -v front="$BASE_PORT" -v stats="$STATS_PORT" -v sock="$run_dir/haproxy.sock" \
    -v n="$INSTANCES" -v base="$BASE_PORT" '
    /^ *bind 127\.0\.0\.1:8080$/ { sub(/8080/, front); seen++ }
    /^ *bind 127\.0\.0\.1:8404$/ { sub(/8404/, stats); seen++ }
    /^ *stats socket \/run\/haproxy\/admin\.sock / { sub(/\/run\/haproxy\/admin\.sock/, sock); seen++ }
    # Each backend (ready, live) lists the instances once.
    /^ *server tessera[0-9]+ / {
      if (!listed[block]) {
        for (i = 1; i <= n; i++) printf "    server tessera%d 127.0.0.1:%d check\n", i, base + i
        listed[block] = 1; seen++
      }
      next
    }
    /^backend / { block = $2 }
    { print }
    END { if (seen != 5) { print "deploy/haproxy.cfg no longer has the lines cluster.sh rewrites" > "/dev/stderr"; exit 1 } }
  ' deploy/haproxy.cfg
}

ensure_haproxy() {
  command -v haproxy >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "haproxy is missing: apt-get install haproxy"
  say "installing haproxy (Debian package; its own service is not started here)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }
}

ensure_postgres() {
  pg_isready -q -h 127.0.0.1 -p 5432 && return 0
  local ver name
  read -r ver name _ < <(pg_lsclusters --no-header | head -n 1)
  say "starting PostgreSQL $ver/$name"
  pg_ctlcluster "$ver" "$name" start
  for _ in $(seq 1 100); do
    pg_isready -q -h 127.0.0.1 -p 5432 && return 0
    sleep 0.1
  done
  die "PostgreSQL did not come up on 127.0.0.1:5432"
}

cmd_start() {
  INSTANCES=${n_opt:-3}
  BASE_PORT=${port_opt:-18080}
  [ "$INSTANCES" -ge 1 ] || die "--instances must be at least 1"
  if [ -f "$state" ]; then
    # shellcheck disable=SC1090
    . "$state"
    for f in "$run_dir"/*.pid; do
      [ -e "$f" ] || continue
      alive "$(pid_of "$(basename "$f" .pid)")" && die "a cluster is running in $run_dir: stop it first"
    done
    rm -f "$state"
    INSTANCES=${n_opt:-3}
    BASE_PORT=${port_opt:-18080}
  fi
  STATS_PORT=$((BASE_PORT + INSTANCES + 1))
  REDIS_PORT=$((BASE_PORT + INSTANCES + 2))
  if [ -n "$bin_opt" ]; then
    BIN=$(cd "$(dirname "$bin_opt")" && pwd)/$(basename "$bin_opt")
  else
    cargo build --quiet --bin tessera
    BIN=$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/tessera
  fi
  CONFIG=$(cd "$(dirname "${config_opt:-deploy/tessera.toml}")" && pwd)/$(basename "${config_opt:-deploy/tessera.toml}")
  ensure_haproxy
  CREATED_DB=""
  OWN_REDIS=""
  database_url=$database_url_opt
  if [ -z "$database_url" ]; then
    ensure_postgres
    CREATED_DB="tessera_cluster_$(date +%s)_$$"
    psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $CREATED_DB"
    database_url="postgres://postgres@127.0.0.1:5432/$CREATED_DB"
  fi
  redis_url=$redis_url_opt
  prefix_line=""
  if [ -z "$redis_url" ]; then
    OWN_REDIS=1
    start_redis
    redis_url="redis://127.0.0.1:$REDIS_PORT/0"
  else
    # A Redis shared with others: this rig's keys under a prefix of their own.
    prefix_line="TESSERA_REDIS_KEY_PREFIX=tessera:cluster:$(basename "$run_dir"):$BASE_PORT:"
  fi
  # Every instance must decrypt the secrets the others sealed: one master key for all.
  master_key=${TESSERA_MASTER_KEY:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
  (
    umask 077
    {
      echo "# The environment of every instance (the deployment guide's /etc/tessera/tessera.env)."
      echo "DATABASE_URL=$database_url"
      echo "REDIS_URL=$redis_url"
      echo "TESSERA_MASTER_KEY=$master_key"
      echo "TESSERA_CONFIG=$CONFIG"
      [ -z "$prefix_line" ] || echo "$prefix_line"
    } >"$run_dir/tessera.env"
  )
  cat >"$state" <<EOF
INSTANCES=$INSTANCES
BASE_PORT=$BASE_PORT
STATS_PORT=$STATS_PORT
REDIS_PORT=$REDIS_PORT
BIN=$BIN
CONFIG=$CONFIG
CREATED_DB=$CREATED_DB
OWN_REDIS=$OWN_REDIS
EOF
  # One at a time: the first runs the migrations before the others open the database.
  for i in $(seq 1 "$INSTANCES"); do
    start_instance "$i"
  done
  haproxy_config >"$run_dir/haproxy.cfg"
  haproxy -q -c -f "$run_dir/haproxy.cfg" >/dev/null
  # In the foreground (-db) as a child of nobody's terminal: the distro's haproxy service is
  # never touched.
  # A new log per start (HAProxy writes its stdout log at its own offset, so appending to an older
  # one would interleave; the chaos run counts requests per instance from this log).
  haproxy -db -f "$run_dir/haproxy.cfg" >"$run_dir/haproxy.log" 2>&1 &
  echo $! >"$run_dir/haproxy.pid"
  front="http://127.0.0.1:$BASE_PORT"
  for _ in $(seq 1 200); do
    [ "$(http_status "$front/readyz")" = 200 ] && break
    alive "$(pid_of haproxy)" || die "haproxy exited (log: $run_dir/haproxy.log)"
    sleep 0.05
  done
  [ "$(http_status "$front/readyz")" = 200 ] || die "$front/readyz is not 200 through HAProxy"
  local redis_said="shared (prefix ${prefix_line#*=})"
  [ -z "$OWN_REDIS" ] || redis_said="its own on port $REDIS_PORT"
  say "$INSTANCES instances on ports $((BASE_PORT + 1))..$((BASE_PORT + INSTANCES)), redis $redis_said, database ${CREATED_DB:-as given}, run dir $run_dir"
  say "stats: http://127.0.0.1:$STATS_PORT/"
  echo "$front"
}

cmd_stop() {
  load_state
  stop_pid "$(pid_of haproxy)" haproxy
  for i in $(seq 1 "$INSTANCES"); do
    stop_pid "$(pid_of "inst$i")" "instance $i"
  done
  [ -z "$OWN_REDIS" ] || stop_redis
  if [ -n "$CREATED_DB" ]; then
    psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $CREATED_DB WITH (FORCE)" >/dev/null 2>&1 ||
      say "could not drop database $CREATED_DB"
  fi
  rm -f "$state" "$run_dir"/*.pid
  say "stopped (logs kept in $run_dir)"
}

cmd_status() {
  load_state
  local rc=0 csv
  csv=$(curl -s -m 2 "http://127.0.0.1:$STATS_PORT/;csv" 2>/dev/null || true)
  for i in $(seq 1 "$INSTANCES"); do
    local pid st hap
    pid=$(pid_of "inst$i")
    st=$(http_status "http://127.0.0.1:$((BASE_PORT + i))/readyz")
    hap=$(echo "$csv" | awk -F, -v s="tessera$i" '$1 == "tessera" && $2 == s { print $18 }')
    alive "$pid" || { pid="-"; rc=1; }
    echo "instance $i  port $((BASE_PORT + i))  pid $pid  readyz ${st:-none}  haproxy ${hap:-unknown}"
  done
  if alive "$(pid_of haproxy)"; then
    echo "haproxy  http://127.0.0.1:$BASE_PORT  readyz $(http_status "http://127.0.0.1:$BASE_PORT/readyz")"
  else
    echo "haproxy  down"
    rc=1
  fi
  if [ -n "$OWN_REDIS" ]; then
    echo "redis  port $REDIS_PORT  $(redis-cli -p "$REDIS_PORT" ping 2>/dev/null || echo down)"
  fi
  return $rc
}

cmd_kill() {
  load_state
  [ -n "$index" ] && [ "$index" -ge 1 ] && [ "$index" -le "$INSTANCES" ] || die "kill: which instance (1..$INSTANCES)?"
  local pid
  pid=$(pid_of "inst$index")
  alive "$pid" || die "instance $index is not running"
  kill -KILL "$pid"
  for _ in $(seq 1 100); do
    alive "$pid" || return 0
    sleep 0.02
  done
  die "instance $index (pid $pid) survived SIGKILL for 2 s"
}

# One command to HAProxy's admin socket (Python rather than socat, which CI may lack).
haproxy_cmd() {
  python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())' "$run_dir/haproxy.sock" "$1"
}

# A field of `show stat` for server tesseraI of the ready backend (5: scur, 18: status).
server_stat() {
  haproxy_cmd "show stat" | awk -F, -v s="tessera$1" -v f="$2" '$1 == "tessera" && $2 == s { print $f }'
}

# The rolling restart of docs/deployment.md for one instance: drain it in HAProxy, wait until
# it has no request left, SIGTERM (it finishes what it holds, D16.22), start it, put it back.
restart_instance() {
  local i=$1 pid
  haproxy_cmd "set server tessera/tessera$i state drain" >/dev/null
  for _ in $(seq 1 100); do
    [ "$(server_stat "$i" 5)" = 0 ] && break
    sleep 0.1
  done
  pid=$(pid_of "inst$i")
  stop_pid "$pid" "instance $i"
  start_instance "$i"
  haproxy_cmd "set server tessera/tessera$i state ready" >/dev/null
  for _ in $(seq 1 100); do
    [ "$(server_stat "$i" 18)" = UP ] && return 0
    sleep 0.1
  done
  die "instance $i is not UP in HAProxy 10 s after its restart"
}

cmd_start_instance() {
  load_state
  [ -n "$index" ] && [ "$index" -ge 1 ] && [ "$index" -le "$INSTANCES" ] || die "start-instance: which instance (1..$INSTANCES)?"
  start_instance "$index"
}

case $cmd in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill) cmd_kill ;;
  start-instance) cmd_start_instance ;;
  restart)
    load_state
    [ -n "$index" ] && [ "$index" -ge 1 ] && [ "$index" -le "$INSTANCES" ] || die "restart: which instance (1..$INSTANCES)?"
    restart_instance "$index"
    ;;
  rolling-restart)
    load_state
    for i in $(seq 1 "$INSTANCES"); do restart_instance "$i"; done
    ;;
  redis-stop) load_state; [ -n "$OWN_REDIS" ] || die "the rig uses a shared Redis"; stop_redis ;;
  redis-start) load_state; [ -n "$OWN_REDIS" ] || die "the rig uses a shared Redis"; start_redis ;;
  *) usage ;;
esac
