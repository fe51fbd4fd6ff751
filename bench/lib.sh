# bench/lib.sh - helpers of bench/run.sh, bench/scale.sh and bench/merged.sh
# (sourced, not run).
#
# The scripts keep what they start in two arrays, which cleanup stops:
# pids (brokers, watchers) and runs (mqplan runs under timeout, each the
# leader of its process group); tmp is their temporary directory.

say() { printf '%s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# calc EXPR: floating-point arithmetic (awk), printed with %.6g unless
# the expression formats itself. fmt FORMAT EXPR: the same, formatted.
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
ncpu=$(nproc)

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

# vmrss PID: sets REPLY to the process's VmRSS in kB ("" when gone). No
# subprocess, so that sampling costs next to nothing.
vmrss() {
	local k v _
	REPLY=
	{
		while read -r k v _; do
			if [[ $k == VmRSS: ]]; then REPLY=$v; return 0; fi
		done <"/proc/$1/status"
	} 2>/dev/null || true
}

# busyticks: CPU ticks the whole machine has spent busy since boot.
busyticks() {
	local cpu user nice system idle iowait irq softirq steal _
	read -r cpu user nice system idle iowait irq softirq steal _ </proc/stat
	echo $(( user + nice + system + irq + softirq + steal ))
}

# busy_note OTHER_CPU_S WALL_S: a warning when other processes used more
# than 5% of the machine during a run.
busy_note() {
	if awk "BEGIN { exit !($1 > 0.05 * $ncpu * $2) }"; then
		echo " - WARNING: the machine was not idle, figures are disturbed"
	fi
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

# cleanup stops everything started: each mqplan run's whole process group
# (timeout, GNU time and mqplan with its workers: time would die of a
# SIGTERM and leave mqplan orphaned, so the group is killed outright; a
# run that is cut short has nothing worth keeping), then the brokers.
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

# untrack PID: forget a process that has ended.
untrack() {
	local p keep=()
	for p in "${pids[@]}"; do
		[[ $p == "$1" ]] || keep+=("$p")
	done
	pids=("${keep[@]}")
	keep=()
	for p in "${runs[@]}"; do
		[[ $p == "$1" ]] || keep+=("$p")
	done
	runs=("${keep[@]}")
}

# start_mosquitto NAME: starts Mosquitto on a free 127.0.0.1 port with its
# defaults but for three lines (bench/README.md), and the lines of
# $mosq_extra; sets mosq_pid and mosq_port.
start_mosquitto() {
	local name=$1 conf=$tmp/$1.mosquitto.conf port try i
	for (( try = 0; try < 8; try++ )); do
		port=$(( 20000 + RANDOM % 10000 )) # below the ephemeral port range
		listening "$port" && continue
		# A listener on loopback only, anonymous clients allowed (2.x
		# refuses them by default once a listener is configured), and no
		# logging (logging is I/O the broker would not do in a benchmark
		# of its forwarding, and the CPU it costs would be charged to it).
		cat >"$conf" <<-EOF
			# written by bench/${0##*/}
			listener $port 127.0.0.1
			allow_anonymous true
			log_type none
			${mosq_extra:-}
		EOF
		"$mosquitto" -c "$conf" >"$tmp/$name.mosquitto.log" 2>&1 &
		mosq_pid=$!
		pids+=("$mosq_pid")
		for (( i = 0; i < 50; i++ )); do
			if ! kill -0 "$mosq_pid" 2>/dev/null; then break; fi
			if listening "$port"; then mosq_port=$port; return 0; fi
			sleep 0.1
		done
		stop_mosquitto
	done
	say "bench: could not start mosquitto; its last log:" >&2
	tail -n 5 "$tmp/$name.mosquitto.log" >&2 || true
	return 1
}

stop_mosquitto() {
	if [[ -n ${mosq_pid:-} ]]; then
		kill "$mosq_pid" 2>/dev/null || true
		wait "$mosq_pid" 2>/dev/null || true
		untrack "$mosq_pid"
		mosq_pid=
	fi
}

# find_mosquitto: sets mosquitto to the broker binary (BENCH_MOSQUITTO,
# else on PATH, else /usr/sbin/mosquitto; "" when there is none) and
# mosq_version.
find_mosquitto() {
	mosquitto=${BENCH_MOSQUITTO:-$(command -v mosquitto || true)}
	if [[ -z $mosquitto && -x /usr/sbin/mosquitto ]]; then
		mosquitto=/usr/sbin/mosquitto
	fi
	if [[ -n $mosquitto && ! -x $mosquitto ]]; then
		say "bench: $mosquitto is not an executable"
		mosquitto=
	fi
	mosq_version=
	if [[ -n $mosquitto ]]; then
		mosq_version=$("$mosquitto" -h 2>/dev/null | awk '/version/ { print $3; exit }' || true)
	fi
}

# need_tools TOOL...: dies unless each is on PATH, and GNU time.
need_tools() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || die "$tool is needed"
	done
	[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed: apt-get install time"
}

# raise_nofile: raises the open-file limit to the hard one (Mosquitto
# inherits it; mqplan raises its own) and sets nofile to it.
raise_nofile() {
	local hard
	hard=$(ulimit -Hn)
	if [[ $hard == unlimited ]]; then hard=1048576; fi
	ulimit -n "$hard" 2>/dev/null || true
	nofile=$(ulimit -n)
}

# bench_start NAME: the temporary directory ($tmp, mqplan-NAME.XXXXXX),
# the arrays of what is started, and the traps of bench/scale.sh and
# bench/merged.sh: everything stopped on any exit, the directory removed
# unless BENCH_KEEP=1.
bench_start() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/mqplan-$1.XXXXXX")
	pids=() runs=()
	trap bench_exit EXIT
	trap 'exit 130' INT TERM
}
bench_exit() {
	cleanup
	if [[ ${BENCH_KEEP:-} == 1 ]]; then
		say "bench: reports and logs kept in $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}

# build_mqplan: builds mqplan into $tmp (sets bin and rev).
build_mqplan() {
	say "bench: building mqplan"
	bin=$tmp/mqplan
	go build -o "$bin" ./cmd/mqplan || die "go build failed"
	rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
}
