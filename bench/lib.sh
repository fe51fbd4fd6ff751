# bench/lib.sh - helpers of bench/scale.sh and bench/merged.sh (sourced, not run).
#
# The caller sets, before sourcing: tmp (a temporary directory) and the
# arrays pids (brokers started) and runs (mqplan runs started), which
# cleanup stops.

say() { printf '%s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# calc EXPR / fmt FORMAT EXPR: floating-point arithmetic (awk).
calc() { awk "BEGIN { printf \"%.6g\", ($1) }"; }
fmt() { awk "BEGIN { printf \"$1\", ($2) }"; }

# jq helpers: Go duration strings ("1.5ms", "2m3s") to seconds, phases, sums.
jqdefs='
def secs: if . == null then null else
  ([scan("([0-9.]+)(h|ms|µs|us|ns|m|s)") | (.[0] | tonumber) *
    ({"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}[.[1]])] | add) // 0 end;
def phase($n): first(.phases[] | select(.name == $n));
def allsum($k): [.metrics.phases[] | .[$k] // 0] | add;
def dur($k): (.metrics.top[$k] // null) | if . == null then "-" else . end;
'

clk_tck=$(getconf CLK_TCK)

# cputicks PID: utime+stime of a process, in clock ticks; fails when the
# process is gone.
cputicks() {
	local line rest
	{ read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
	rest=${line##*) }
	# shellcheck disable=SC2086
	set -- $rest
	echo $(( ${12} + ${13} ))
}

# vmrss PID: sets REPLY to the process's VmRSS in kB ("" when gone).
vmrss() {
	local k v _
	REPLY=
	{
		while read -r k v _; do
			if [[ $k == VmRSS: ]]; then REPLY=$v; return 0; fi
		done <"/proc/$1/status"
	} 2>/dev/null || true
}

# children PID: the process's children (of every thread: Go starts them
# from any of its threads).
children() { cat "/proc/$1"/task/*/children 2>/dev/null || true; }

# child PID: the first child of a process, waiting up to 5 s for it.
child() {
	local i c
	for (( i = 0; i < 100; i++ )); do
		c=$(children "$1")
		c=${c%% *}
		if [[ -n $c ]]; then echo "$c"; return 0; fi
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
}

# listening PORT: true when something accepts on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_mosquitto NAME: starts Mosquitto on a free 127.0.0.1 port with its
# defaults but for the lines a benchmark needs (bench/README.md): loopback
# only, anonymous clients, no logging, no connection cap, $SYS every
# second. Sets mosq_pid and mosq_port; the pid joins pids.
start_mosquitto() {
	local name=$1 conf=$tmp/$1.mosquitto.conf port try i
	for (( try = 0; try < 8; try++ )); do
		port=$(( 20000 + RANDOM % 10000 )) # below the ephemeral port range
		listening "$port" && continue
		cat >"$conf" <<-EOF
			# written by bench/${0##*/}
			listener $port 127.0.0.1
			allow_anonymous true
			log_type none
			max_connections -1
			sys_interval 1
		EOF
		"$mosquitto" -c "$conf" >"$tmp/$name.mosquitto.log" 2>&1 &
		mosq_pid=$!
		pids+=("$mosq_pid")
		for (( i = 0; i < 50; i++ )); do
			kill -0 "$mosq_pid" 2>/dev/null || break
			if listening "$port"; then mosq_port=$port; return 0; fi
			sleep 0.1
		done
		kill "$mosq_pid" 2>/dev/null || true
		wait "$mosq_pid" 2>/dev/null || true
	done
	say "bench: could not start mosquitto; its last log:" >&2
	tail -n 5 "$tmp/$name.mosquitto.log" >&2 || true
	return 1
}

# cleanup stops everything started: each mqplan run's process group
# (timeout, GNU time, mqplan and its workers), then the brokers and
# watchers.
cleanup() {
	local p
	for p in "${runs[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${runs[@]}" "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	runs=() pids=()
}

# find_mosquitto: sets mosquitto to the broker binary (BENCH_MOSQUITTO,
# else on PATH, else /usr/sbin/mosquitto), or dies.
find_mosquitto() {
	mosquitto=${BENCH_MOSQUITTO:-$(command -v mosquitto || true)}
	if [[ -z $mosquitto && -x /usr/sbin/mosquitto ]]; then
		mosquitto=/usr/sbin/mosquitto
	fi
	[[ -n $mosquitto && -x $mosquitto ]] || die "mosquitto is needed (apt-get install mosquitto)"
	mosq_version=$("$mosquitto" -h 2>/dev/null | awk '/version/ { print $3; exit }' || true)
}
