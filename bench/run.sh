#!/usr/bin/env bash
# bench/run.sh - reproduces mqplan's performance figures (see bench/README.md).
#
#   bench/run.sh
#
# Scenario A (throughput): 100 publishers + 100 subscribers, 1-to-1, QoS 1,
# 1 KB, 20,000 msg/s, against Mosquitto (started here, with its defaults) and
# the embedded broker: CPU seconds per 100k delivered messages, delivered
# msg/s, loss, latency. Scenarios S (saturation: the same pairs, rate: max),
# F (fan-out: 1 publisher, 500 subscribers, QoS 0) and I (fan-in: 500
# publishers, 1 subscriber, QoS 0), against Mosquitto: CPU seconds per 100k
# delivered, mqplan's beside the broker's in the same run. Scenario B (idle
# connections): 10,000 clients connecting at 5,000/s, held 15 s: mqplan's RSS
# per connection and whether connecting kept up with the plan. The Mosquitto
# runs are skipped when mosquitto is absent.
#
# Environment (all optional):
#   BENCH_DURATION             steady phase of scenario A (default 20s)
#   BENCH_SHORT_DURATION       steady phase of scenarios S, F and I (10s)
#   BENCH_IDLE_COUNT           clients of scenario B against Mosquitto (10000)
#   BENCH_IDLE_HOLD            how long B holds the connections (15s)
#   BENCH_EMBEDDED_IDLE_COUNT  clients of B on the embedded broker (9000: it
#                              holds both ends of each connection, 2 fds each)
#   BENCH_MOSQUITTO            mosquitto binary (default: found on PATH or /usr/sbin)
#   BENCH_KEEP=1               keep the temporary directory (reports, logs)
#
# Exits 0 when every step ran, whether or not the targets were met (the
# summary says "target met" / "target missed" for each figure); 1 when a step
# could not run (build, broker start, an mqplan run that could not complete).
set -euo pipefail
export LC_ALL=C

cd "$(dirname "${BASH_SOURCE[0]}")/.."

duration=${BENCH_DURATION:-20s}
idle_count=${BENCH_IDLE_COUNT:-10000}
idle_hold=${BENCH_IDLE_HOLD:-15s}
emb_idle_count=${BENCH_EMBEDDED_IDLE_COUNT:-9000}
idle_rate=5000                          # connections per second (scenario B)
rate_a=20000 warmup_a=2                 # msg/s and warmup seconds of scenario A (its plan)
plan_a=bench/plans/throughput-1to1-qos1.yaml
plan_b=bench/plans/idle-10k.yaml
short_duration=${BENCH_SHORT_DURATION:-10s}
plan_s=bench/plans/saturation-1to1-qos1.yaml
plan_f=bench/plans/fanout-500-qos0.yaml
rate_f=20000 warmup_f=1 # deliveries/s and warmup seconds of scenario F (its plan)
plan_i=bench/plans/fanin-500-qos0.yaml
rate_i=10000 warmup_i=1 # msg/s and warmup seconds of scenario I (its plan)

# shellcheck source=bench/lib.sh
source bench/lib.sh

need_tools go jq timeout getconf awk
find_mosquitto
raise_nofile

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mqplan-bench.XXXXXX")
pids=() # brokers we started
runs=() # mqplan runs: pids of `timeout`, each the leader of its process group

# Ctrl-C or SIGTERM: the running scenario (a background subshell, so that
# the signal is handled at once) stops what it started, then we exit.
scenario_pid=
interrupted() {
	if [[ -n $scenario_pid ]]; then
		kill -TERM "$scenario_pid" 2>/dev/null || true
		while kill -0 "$scenario_pid" 2>/dev/null; do
			wait "$scenario_pid" 2>/dev/null || sleep 0.1
		done
	fi
	exit 130
}
trap bench_exit EXIT
trap interrupted INT TERM

secs() { jq -rn --arg d "$1" "$jqdefs"' $d | secs'; }

# judge COND: "target met" or "target missed"
judge() {
	if awk "BEGIN { exit !($1) }"; then echo "target met"; else echo "target missed"; fi
}

# save NAME VAR...: writes the variables as shell assignments to
# $tmp/NAME.vars, read back by the summary (scenarios run in subshells).
save() {
	local f=$tmp/$1.vars v
	shift
	: >"$f"
	for v in "$@"; do
		printf '%s=%q\n' "$v" "${!v}" >>"$f"
	done
}

# run_mqplan NAME BOUND_SECONDS BROKER_PID ARGS...
# Runs `mqplan run --quiet --json $tmp/NAME.json ARGS...` under
# /usr/bin/time (mqplan's own user+sys CPU and peak RSS, in $tmp/NAME.time)
# and `timeout` (every run is bounded). While it runs, samples mqplan's
# VmRSS, and BROKER_PID's ("-" for none), every 0.25 s into $tmp/NAME.rss
# ("seconds-since-start mqplan-kB broker-kB"). Fails when mqplan could not
# run; a failed threshold (exit 1) is not a failure of the benchmark.
run_mqplan() {
	local name=$1 bound=$2 bpid=$3
	shift 3
	local out=$tmp/$name tpid mpid t0 k0 rc=0 r b
	t0=$EPOCHREALTIME
	k0=$(busyticks)
	timeout -k 10 "$bound" /usr/bin/time -f '%e %U %S %M' -o "$out.time" \
		"$bin" run --quiet --json "$out.json" "$@" >"$out.txt" 2>"$out.err" &
	tpid=$!
	runs+=("$tpid")
	: >"$out.rss"
	mpid=$(child "$(child "$tpid")") # timeout -> time -> mqplan
	if [[ -n $mpid ]]; then
		while kill -0 "$mpid" 2>/dev/null; do
			vmrss "$mpid"
			r=$REPLY
			b=-
			if [[ $bpid != - ]]; then vmrss "$bpid"; b=${REPLY:--}; fi
			[[ -n $r ]] && printf '%s %s %s\n' "$(calc "$EPOCHREALTIME - $t0")" "$r" "$b" >>"$out.rss"
			sleep 0.25
		done
	fi
	wait "$tpid" || rc=$?
	untrack "$tpid"
	# wall seconds and CPU-seconds the whole machine was busy during the run
	printf '%s %s\n' "$(calc "$EPOCHREALTIME - $t0")" "$(calc "($(busyticks) - $k0) / $clk_tck")" >"$out.busy"
	if (( rc > 1 )) || [[ ! -s $out.json ]]; then
		say "bench: mqplan run '$name' did not complete (exit $rc$([[ $rc == 124 ]] && echo ": timed out after ${bound}s")):" >&2
		tail -n 15 "$out.txt" "$out.err" >&2 || true
		return 1
	fi
}

# cpu_of NAME: mqplan's user+sys CPU seconds from $tmp/NAME.time (GNU time
# writes "Command exited with non-zero status" first when exit != 0).
cpu_of() { tail -n 1 "$tmp/$1.time" | awk '{ printf "%.3f", $2 + $3 }'; }

# rss_hold NAME COLUMN: max RSS (kB) over the samples taken during the hold
# (from 1 s after the steady phase began to its end), and how many there were.
rss_hold() {
	local lo hi
	lo=$(jq -r "$jqdefs"'(phase("steady").start | secs) + 1' "$tmp/$1.json")
	hi=$(jq -r "$jqdefs"'phase("steady").end | secs' "$tmp/$1.json")
	awk -v lo="$lo" -v hi="$hi" -v c="$2" '
		$1 >= lo && $1 <= hi && $c != "-" { n++; if ($c > m) m = $c }
		END { printf "%d %d\n", m, n }' "$tmp/$1.rss"
}

# ---------------------------------------------------------------------------

build_mqplan
version=$("$bin" version 2>/dev/null | head -n 1 | sed 's/^mqplan //' || true)
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)

"$bin" validate "$plan_a" "$plan_b" "$plan_s" "$plan_f" "$plan_i" >/dev/null || die "the bench plans do not validate"

# Two cores are shared by mqplan and the broker: anything else running skews
# every figure. Say so up front (each run also reports the other load).
k0=$(busyticks)
sleep 1
pre_busy=$(fmt '%.0f' "100 * ($(busyticks) - $k0) / $clk_tck / $ncpu")
if (( pre_busy > 5 )); then
	say "bench: WARNING: the machine is ${pre_busy}% busy before the benchmark starts; the figures will be disturbed"
fi
d_secs=$(secs "$duration")
planned_a=$(fmt '%.0f' "$rate_a * ($warmup_a + $d_secs)")
h_secs=$(secs "$idle_hold")
bound_a=$(fmt '%d' "2 + $d_secs + 5 + 90")
sd_secs=$(secs "$short_duration")
bound_short=$(fmt '%d' "1 + $sd_secs + 5 + 90")
planned_f=$(fmt '%.0f' "$rate_f / 500 * ($warmup_f + $sd_secs)") # messages published (1 publisher)
planned_i=$(fmt '%.0f' "$rate_i * ($warmup_i + $sd_secs)")

# Scenario A ------------------------------------------------------------------

# throughput NAME PLANNED DURATION BOUND BROKER_PID ARGS...: runs a plan
# (among ARGS) with its steady phase set to DURATION, prints its figures and
# writes $tmp/NAME.vars (shell assignments) for the summary. PLANNED is the
# messages the plan's schedule sends over warmup + steady, "-" for a closed
# loop (rate: max), which has no schedule.
throughput() {
	local name=$1 planned=$2 dur=$3 bound=$4 bpid=$5
	shift 5
	local b0=0 b1=0 vals
	bcpu=-
	[[ $bpid != - ]] && b0=$(cputicks "$bpid")
	run_mqplan "$name" "$bound" "$bpid" --set "duration=$dur" "$@"
	[[ $bpid != - ]] && b1=$(cputicks "$bpid") && bcpu=$(fmt '%.3f' "($b1 - $b0) / $clk_tck")
	mcpu=$(cpu_of "$name")
	read -r wall busy <"$tmp/$name.busy"
	other=$(fmt '%.2f' "$busy - $mcpu - ${bcpu/#-/0}")
	vals=$(jq -r "$jqdefs"'[allsum("sent"), allsum("expected"), allsum("received"),
		allsum("lost"), allsum("duplicates"), (.metrics.top.received // 0),
		(.metrics.top.recv_rate // 0), (.metrics.top.lost // 0), dur("latency.p50"),
		dur("latency.p99"), (phase("steady").duration | secs), .verdict] | @tsv' "$tmp/$name.json")
	IFS=$'\t' read -r sent expected received lost dups s_recv s_rate s_lost p50 p99 s_dur verdict <<<"$vals"
	s_rate=$(fmt '%.0f' "$s_rate")
	m100k=$(fmt '%.3f' "$received > 0 ? $mcpu * 100000 / $received : -1")
	b100k=- ratio=-
	if [[ $bcpu != - ]]; then
		b100k=$(fmt '%.3f' "$received > 0 ? $bcpu * 100000 / $received : -1")
		ratio=$(fmt '%.3f' "$bcpu > 0 ? $mcpu / $bcpu : 999")
	fi
	if [[ $planned == - ]]; then
		all_delivered=$(judge "$lost == 0 && $received >= $expected && $sent > 0")
	else
		all_delivered=$(judge "$lost == 0 && $received >= $expected && $sent >= $planned")
	fi
	save "$name" all_delivered sent expected received lost dups s_recv s_rate s_lost p50 p99 verdict \
		mcpu bcpu m100k b100k ratio wall busy other
	say "  delivered      $received of $expected expected over warmup+steady ($sent sent of $planned planned), lost $lost, duplicates $dups"
	say "  steady phase   $s_recv delivered in $(fmt '%.1f' "$s_dur") s = $s_rate msg/s, lost $s_lost, latency p50 $p50 p99 $p99 (plan verdict $verdict)"
	if [[ $bcpu != - ]]; then
		say "  CPU, whole run mqplan $mcpu s, broker $bcpu s ($(fmt '%.1f' "$wall") s wall)"
		say "  CPU-s / 100k   mqplan $m100k, broker $b100k, mqplan/broker $ratio"
	else
		say "  CPU, whole run $mcpu s for the one process, mqplan's clients and the embedded broker together ($(fmt '%.1f' "$wall") s wall)"
		say "  CPU-s / 100k   $m100k (clients + broker; mqplan's share cannot be separated)"
	fi
	say "  other load     $other CPU-s used by other processes on the machine during the run$(busy_note "$other" "$wall")"
}

scenario_a_mosquitto() {
	say ""
	say "A. throughput vs Mosquitto $mosq_version: 100 pub + 100 sub, 1-to-1, QoS 1, 1 KB, 20,000 msg/s, warmup 2s, steady $duration, drain 5s"
	start_mosquitto a-mosquitto
	say "  broker         $mosquitto on 127.0.0.1:$mosq_port (pid $mosq_pid), running mqplan (about $(fmt '%.0f' "$d_secs + 10") s)..."
	throughput a-mosquitto "$planned_a" "$duration" "$bound_a" "$mosq_pid" --broker "mqtt://127.0.0.1:$mosq_port" "$plan_a"
	stop_mosquitto
}

scenario_a_embedded() {
	say ""
	say "A. throughput on the embedded broker: same plan, broker in mqplan's process; running (about $(fmt '%.0f' "$d_secs + 10") s)..."
	throughput a-embedded "$planned_a" "$duration" "$bound_a" - "$plan_a"
}

# Scenarios S, F, I -------------------------------------------------------------

scenario_s_mosquitto() {
	say ""
	say "S. saturation vs Mosquitto $mosq_version: the pairs of A (100 pub + 100 sub, 1-to-1, QoS 1, 1 KB), rate: max, inflight 8, warmup 1s, steady $short_duration, drain 5s"
	start_mosquitto s-mosquitto
	say "  broker         $mosquitto on 127.0.0.1:$mosq_port (pid $mosq_pid), running mqplan (about $(fmt '%.0f' "$sd_secs + 3") s)..."
	throughput s-mosquitto - "$short_duration" "$bound_short" "$mosq_pid" --broker "mqtt://127.0.0.1:$mosq_port" "$plan_s"
	stop_mosquitto
}

scenario_f_mosquitto() {
	say ""
	say "F. fan-out vs Mosquitto $mosq_version: 1 publisher, 500 subscribers on its topic, QoS 0, 1 KB, 40 msg/s = 20,000 deliveries/s, warmup 1s, steady $short_duration, drain 3s"
	start_mosquitto f-mosquitto
	say "  broker         $mosquitto on 127.0.0.1:$mosq_port (pid $mosq_pid), running mqplan (about $(fmt '%.0f' "$sd_secs + 3") s)..."
	throughput f-mosquitto "$planned_f" "$short_duration" "$bound_short" "$mosq_pid" --broker "mqtt://127.0.0.1:$mosq_port" "$plan_f"
	stop_mosquitto
}

scenario_i_mosquitto() {
	say ""
	say "I. fan-in vs Mosquitto $mosq_version: 500 publishers, 1 subscriber (bench/in/+), QoS 0, 1 KB, 20 msg/s each = 10,000 msg/s, warmup 1s, steady $short_duration, drain 3s"
	start_mosquitto i-mosquitto
	say "  broker         $mosquitto on 127.0.0.1:$mosq_port (pid $mosq_pid), running mqplan (about $(fmt '%.0f' "$sd_secs + 3") s)..."
	throughput i-mosquitto "$planned_i" "$short_duration" "$bound_short" "$mosq_pid" --broker "mqtt://127.0.0.1:$mosq_port" "$plan_i"
	stop_mosquitto
}

# Scenario B ------------------------------------------------------------------

# idle NAME COUNT BROKER_PID ARGS...: plan B at COUNT clients and at 1
# client (the baseline); writes $tmp/NAME.vars.
idle() {
	local name=$1 bpid=$3 bound vals bbase bfull
	n=$2
	shift 3
	planned=$(fmt '%.3f' "$n / $idle_rate")
	bound=$(fmt '%d' "$planned + $h_secs + 90")
	local common=(--set "duration=$idle_hold" --set "groups.idle.connect_rate=$idle_rate/s")
	run_mqplan "$name-base" "$bound" "$bpid" "${common[@]}" --set groups.idle.count=1 "$@"
	run_mqplan "$name" "$bound" "$bpid" "${common[@]}" --set "groups.idle.count=$n" "$@"
	vals=$(jq -r "$jqdefs"'[(.metrics.top["connect.ok"] // 0), (.metrics.top["connect.failed"] // 0),
		(phase("warmup").start | secs), dur("connect.p99"), (.metrics.top.disconnects // 0), .verdict] | @tsv' "$tmp/$name.json")
	IFS=$'\t' read -r ok failed conn_s cp99 disc verdict <<<"$vals"
	conn_s=$(fmt '%.3f' "$conn_s")
	read -r base base_n < <(rss_hold "$name-base" 2)
	read -r full full_n < <(rss_hold "$name" 2)
	read -r bbase _ < <(rss_hold "$name-base" 3)
	read -r bfull _ < <(rss_hold "$name" 3)
	if (( base_n == 0 || full_n == 0 )); then
		say "bench: no RSS samples during the hold of $name" >&2
		return 1
	fi
	per_conn=$(fmt '%.2f' "($full - $base) / ($n - 1)")
	kept_up=$(judge "$failed == 0 && $ok == $n && $conn_s <= 1.1 * $planned")
	b_per_conn=-
	if [[ $bpid != - ]]; then
		b_per_conn=$(fmt '%.2f' "($bfull - $bbase) / ($n - 1)")
	fi
	save "$name" n ok failed disc conn_s planned cp99 verdict base full base_n full_n per_conn kept_up b_per_conn
	say "  connected      $ok of $n, $failed failed, $disc disconnects; all connected $conn_s s after the start (planned $planned s at $idle_rate/s), connect p99 $cp99; kept up with the plan: ${kept_up#target }"
	say "  RSS in hold    $(fmt '%.1f' "$base / 1024") MiB at 1 client, $(fmt '%.1f' "$full / 1024") MiB at $n (max of $base_n and $full_n samples)"
}

scenario_b_mosquitto() {
	say ""
	say "B. idle connections vs Mosquitto $mosq_version: $idle_count clients at $idle_rate/s, held $idle_hold (and the baseline: 1 client)"
	if (( nofile < idle_count + 100 )); then
		say "  warning: open-file limit $nofile is below $idle_count connections for Mosquitto"
	fi
	start_mosquitto b-mosquitto
	say "  broker         $mosquitto on 127.0.0.1:$mosq_port (pid $mosq_pid, open-file limit $nofile), running mqplan twice (about $(fmt '%.0f' "2 * ($h_secs + 3)") s)..."
	idle b-mosquitto "$idle_count" "$mosq_pid" --broker "mqtt://127.0.0.1:$mosq_port" "$plan_b"
	stop_mosquitto
	say "  mqplan RSS     $per_conn KiB per idle connection = (RSS at $idle_count - RSS at 1) / $(( idle_count - 1 )): $(judge "$per_conn <= 16")"
	say "  broker RSS     $b_per_conn KiB per connection in Mosquitto (for reference)"
}

scenario_b_embedded() {
	say ""
	say "B. idle connections on the embedded broker: $emb_idle_count clients at $idle_rate/s, held $idle_hold (and the baseline: 1 client)"
	say "  (fewer than $idle_count: the process holds both ends of each connection, 2 descriptors each, open-file limit 20000)"
	say "  running mqplan twice (about $(fmt '%.0f' "2 * ($h_secs + 3)") s)..."
	idle b-embedded "$emb_idle_count" - "$plan_b"
	say "  process RSS    $per_conn KiB per connection, client and broker side together (one process; no target)"
}

# Run each scenario in its own subshell, with errexit on, so that a step that
# cannot run ends that scenario (and makes the exit status 1) but not the
# others. Each cleans up what it started when it ends, fails or is stopped.
failed_steps=()
scenario() {
	local rc=0
	set +e
	(
		set -e
		pids=() runs=()
		trap cleanup EXIT
		trap 'exit 130' INT TERM
		"$1"
	) &
	scenario_pid=$!
	wait "$scenario_pid"
	rc=$?
	scenario_pid=
	set -e
	(( rc == 130 )) && exit 130
	(( rc == 0 )) || failed_steps+=("$1")
}

if [[ -n $mosquitto ]]; then
	scenario scenario_a_mosquitto
else
	say ""
	say "A. throughput vs Mosquitto: SKIPPED, mosquitto is not installed (apt-get install mosquitto)"
fi
scenario scenario_a_embedded
if [[ -n $mosquitto ]]; then
	scenario scenario_s_mosquitto
	scenario scenario_f_mosquitto
	scenario scenario_i_mosquitto
else
	say ""
	say "S, F, I. saturation, fan-out, fan-in vs Mosquitto: SKIPPED, mosquitto is not installed (apt-get install mosquitto)"
fi
if [[ -n $mosquitto ]]; then
	scenario scenario_b_mosquitto
else
	say ""
	say "B. idle connections vs Mosquitto: SKIPPED, mosquitto is not installed (apt-get install mosquitto)"
fi
scenario scenario_b_embedded

# Summary ---------------------------------------------------------------------

# load NAME: the figures of a scenario, or false when it did not run.
load() {
	[[ -s $tmp/$1.vars ]] || return 1
	# shellcheck disable=SC1090
	source "$tmp/$1.vars"
}
ran_failed() {
	local f
	for f in "${failed_steps[@]}"; do [[ $f == "$1" ]] && return 0; done
	return 1
}
status() { # status SCENARIO_FN: why a scenario has no figures
	if ran_failed "$1"; then echo "FAILED TO RUN (see above)"; else echo "skipped (mosquitto not installed)"; fi
}

say ""
say "==================================== mqplan bench summary ===================================="
say "mqplan $version ($rev), Go $(go env GOVERSION | sed 's/^go//'), $cpu_model, $(nproc) cores${mosq_version:+, Mosquitto $mosq_version}"
say "A  throughput: 100 pub + 100 sub, 1-to-1, QoS 1, 1 KB, 20,000 msg/s planned, steady $duration"
if load a-mosquitto; then
	say "   Mosquitto   delivered $received/$expected of $sent sent, $planned_a planned (lost $lost); steady $s_rate msg/s; p50 $p50 p99 $p99"
	say "               CPU-s per 100k delivered: mqplan $m100k: $(judge "$m100k <= 2.0") (<= 2.0), Mosquitto $b100k"
	say "               mqplan/broker CPU $ratio: $(judge "$ratio <= 0.8") (<= 0.8)"
	say "               every planned message sent and delivered: $all_delivered"
	say "               other processes used $other CPU-s during the run$(busy_note "$other" "$wall")"
else
	say "   Mosquitto   $(status scenario_a_mosquitto)"
fi
if load a-embedded; then
	say "   embedded    delivered $received/$expected of $sent sent, $planned_a planned (lost $lost); steady $s_rate msg/s; p50 $p50 p99 $p99"
	say "               CPU-s per 100k delivered: $m100k for the whole process (clients + in-process broker)"
	say "               other processes used $other CPU-s during the run$(busy_note "$other" "$wall")"
else
	say "   embedded    $(status scenario_a_embedded)"
fi
# short NAME LABEL TARGET: the summary of scenario S, F or I (TARGET: the
# bound on mqplan's CPU-s per 100k delivered, or - for none).
short() {
	local target
	if load "$1"; then
		target=
		[[ $3 != - ]] && target=": $(judge "$m100k <= $3") (<= $3)"
		say "$2delivered $received/$expected of $sent sent (lost $lost); steady $s_rate msg/s delivered; p50 $p50 p99 $p99"
		say "               CPU-s per 100k delivered: mqplan $m100k$target, Mosquitto $b100k; mqplan/broker $ratio"
		say "               every message sent delivered: $all_delivered"
		say "               other processes used $other CPU-s during the run$(busy_note "$other" "$wall")"
	else
		say "$2$(status "scenario_${1%%-*}_mosquitto")"
	fi
}
say "S  saturation: the pairs of A at rate: max (closed loop, inflight 8), steady $short_duration"
short s-mosquitto "   Mosquitto   " 1.2
say "F  fan-out: 1 publisher -> 500 subscribers, QoS 0, 1 KB, 20,000 deliveries/s planned, steady $short_duration"
short f-mosquitto "   Mosquitto   " 0.5
say "I  fan-in: 500 publishers -> 1 subscriber, QoS 0, 1 KB, 10,000 msg/s planned, steady $short_duration"
short i-mosquitto "   Mosquitto   " -
say "B  idle connections at $idle_rate/s, held $idle_hold; RSS per connection = (RSS at N - RSS at 1) / (N - 1)"
if load b-mosquitto; then
	say "   Mosquitto   N=$n: mqplan RSS $per_conn KiB/connection: $(judge "$per_conn <= 16") (<= 16 KiB; existing tools: 33-53 KB)"
	say "               connected $ok/$n in $conn_s s (plan $planned s), failed $failed: kept up with the plan: $kept_up"
	say "               (Mosquitto's own RSS: $b_per_conn KiB/connection)"
else
	say "   Mosquitto   $(status scenario_b_mosquitto)"
fi
if load b-embedded; then
	say "   embedded    N=$n: process RSS $per_conn KiB/connection, client + broker side in one process (no target)"
	say "               connected $ok/$n in $conn_s s (plan $planned s), failed $failed: kept up with the plan: ${kept_up#target } (no target)"
else
	say "   embedded    $(status scenario_b_embedded)"
fi
say "=============================================================================================="

if (( ${#failed_steps[@]} > 0 )); then
	say "bench: these steps could not run: ${failed_steps[*]}" >&2
	exit 1
fi
