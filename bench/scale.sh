#!/usr/bin/env bash
# bench/scale.sh - a plan one mqplan process cannot hold here, run through
# mqplan run --workers (see bench/README.md, "Past one process").
#
#   bench/scale.sh        # about a minute
#
# 24,000 connections (bench/plans/scale-24k.yaml: 12,000 subscribers and
# 12,000 publishers, 1-to-1, QoS 1, one message every 5 s each) against two
# Mosquittos started here (broker.urls; a broker is a process with the same
# open-file limit of 20,000), from source addresses 127.0.0.2 and
# 127.0.0.3. It shows what mqplan says when the plan is run as one process
# (refused before connecting), then runs it with --workers 2 and checks, exiting 1 on
# any mismatch:
#   - every client connected (24,000), none failed, none disconnected;
#   - sent == the planned messages == expected == received, lost 0,
#     duplicates 0 (the merged report, all phases);
#   - each Mosquitto's own $SYS/broker/clients/connected was exactly its
#     half (12,000, the script's $SYS watcher aside) through the steady
#     phase, 24,000 together, and back to none after the run;
#   - the brokers' $SYS/broker/publish/messages/received grew by exactly
#     mqplan's sent.
# and prints the time to all connected, the latency, and each worker's
# peak RSS and CPU (from /proc) beside the brokers'.
#
# Environment (all optional):
#   SCALE_WORKERS     --workers value (default 2; auto picks 2 here too)
#   SCALE_HOLD        the steady phase (default 20s)
#   BENCH_MOSQUITTO   mosquitto binary (default: on PATH or /usr/sbin)
#   BENCH_KEEP=1      keep the temporary directory (reports, $SYS logs)
set -euo pipefail
export LC_ALL=C

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start scale

need_tools go jq timeout getconf awk mosquitto_sub
find_mosquitto
[[ -n $mosquitto ]] || die "mosquitto is needed (apt-get install mosquitto)"

plan=bench/plans/scale-24k.yaml
pairs=12000 every=5 warmup=2 # the plan's
workers=${SCALE_WORKERS:-2}
hold=${SCALE_HOLD:-20s}

raise_nofile
build_mqplan

mosq_extra='sys_interval 1' # $SYS every second, for the watchers below
start_mosquitto a
port_a=$mosq_port pid_a=$mosq_pid
start_mosquitto b
port_b=$mosq_port pid_b=$mosq_pid
sets=(--set "broker.urls=[mqtt://127.0.0.1:$port_a, mqtt://127.0.0.1:$port_b]" --set "duration=$hold")

# One $SYS watcher per broker, connected before the run and counted by
# the broker as one client: every change of its connection count and of
# the PUBLISH packets it received, with the wall time.
for b in a b; do
	port_var=port_$b
	mosquitto_sub -p "${!port_var}" -i "scale-sys-$b" -t '$SYS/broker/clients/connected' \
		-t '$SYS/broker/publish/messages/received' -F '%U %t %p' >"$tmp/$b.sys" 2>"$tmp/$b.sys.err" &
	pids+=($!)
done
# sys_value FILE TOPIC_SUFFIX [AT]: the topic's value at wall time AT
# (default: its last), "" when none yet.
sys_value() {
	awk -v t="$2" -v at="${3:-1e30}" '$2 ~ ("/" t "$") && $1 <= at { v = $3 } END { print v }' "$1"
}
for b in a b; do
	for (( i = 0; i < 100; i++ )); do
		[[ $(sys_value "$tmp/$b.sys" connected) == 1 ]] && break
		sleep 0.05
	done
	[[ $(sys_value "$tmp/$b.sys" connected) == 1 ]] || die "the \$SYS watcher of broker $b did not see itself connected within 5 s (its connection count: '$(sys_value "$tmp/$b.sys" connected)')"
done

say ""
say "bench/scale.sh at $rev, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, Mosquitto $mosq_version on 127.0.0.1:$port_a and :$port_b (pids $pid_a, $pid_b), open-file limit $nofile"
say ""
say "1. the plan as one process"
"$bin" explain "${sets[@]}" "$plan" | grep -E '^(peak connections|file descriptors|local ports|WARNING)' | sed 's/^/   explain: /'
rc=0
"$bin" run --quiet "${sets[@]}" "$plan" >"$tmp/single.txt" 2>&1 || rc=$?
sed 's/^/   run:     /' "$tmp/single.txt"
failures=()
check() { # check NAME COND: records a failed check
	if awk "BEGIN { exit !($2) }"; then say "   ok        $1"; else say "   MISMATCH  $1"; failures+=("$1"); fi
}
check "one process refused before connecting (exit $rc, want 2), naming --workers 2" \
	"$rc == 2 && $(grep -c 'worker processes: mqplan run --workers 2 ' "$tmp/single.txt" || true) == 1"
check "no client reached a broker" "$(sys_value "$tmp/a.sys" connected) == 1 && $(sys_value "$tmp/b.sys" connected) == 1"

say ""
say "2. mqplan run --workers $workers (about $(( $(jq -rn "$jqdefs"'"'"$hold"'" | secs | floor') + 15 )) s)"
ra0=$(sys_value "$tmp/a.sys" received) rb0=$(sys_value "$tmp/b.sys" received)
ca0=$(cputicks "$pid_a") cb0=$(cputicks "$pid_b")
k0=$(busyticks)
t0=$EPOCHREALTIME
timeout -k 10 170 /usr/bin/time -f '%e %U %S %M' -o "$tmp/w.time" \
	"$bin" run --workers "$workers" --json "$tmp/w.json" "${sets[@]}" "$plan" >"$tmp/w.txt" 2>"$tmp/w.err" &
tpid=$!
runs+=("$tpid")
# Sample the parent and its workers every 0.25 s: peak RSS, and CPU at
# the last sample before each exits (so up to 0.25 s of it is missed).
declare -A rss=() ticks=() name=()
mpid=$(child "$(child "$tpid")") # timeout -> time -> mqplan
brss_a=0 brss_b=0
while [[ -n $mpid ]] && kill -0 "$mpid" 2>/dev/null; do
	for p in "$mpid" $(children "$mpid"); do
		if [[ -z ${name[$p]:-} ]]; then
			name[$p]=parent
			s=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -o -- '--shard [0-9]*/[0-9]*' || true)
			if [[ -n $s ]]; then name[$p]="worker ${s#--shard }"; fi
		fi
		vmrss "$p"
		if [[ -n $REPLY ]] && (( REPLY > ${rss[$p]:-0} )); then rss[$p]=$REPLY; fi
		t=$(cputicks "$p") || t=
		if [[ -n $t ]]; then ticks[$p]=$t; fi
	done
	vmrss "$pid_a"
	if (( ${REPLY:-0} > brss_a )); then brss_a=$REPLY; fi
	vmrss "$pid_b"
	if (( ${REPLY:-0} > brss_b )); then brss_b=$REPLY; fi
	sleep 0.25
done
rc=0
wait "$tpid" || rc=$?
t1=$EPOCHREALTIME
ca1=$(cputicks "$pid_a") cb1=$(cputicks "$pid_b")
k1=$(busyticks)
grep -v '^\[' "$tmp/w.err" | sed 's/^/   /' || true
if [[ ! -s $tmp/w.json ]]; then
	say "bench: the --workers run did not complete (exit $rc):" >&2
	tail -n 20 "$tmp/w.txt" "$tmp/w.err" >&2 || true
	exit 1
fi
# $SYS is published once a second: the counts of the run's end are in
# within two seconds of it.
while awk "BEGIN { exit !($EPOCHREALTIME < $t1 + 2.5) }"; do sleep 0.25; done

vals=$(jq -r "$jqdefs"'[(.metrics.top["connect.ok"] // 0), (.metrics.top["connect.failed"] // 0), (.metrics.top.disconnects // 0),
	allsum("sent"), allsum("expected"), allsum("received"), allsum("lost"), allsum("duplicates"),
	(phase("connect").end | secs), (phase("subscribe").end | secs), (phase("steady").start | secs), (phase("steady").end | secs),
	(.started | sub("\\.[0-9]+Z$"; "Z") | fromdate), (.started | capture("\\.(?<f>[0-9]+)Z$").f // "0"),
	dur("latency.p50"), dur("latency.p99"), dur("latency.p999"), dur("connect.p99"), .verdict] | @tsv' "$tmp/w.json")
IFS=$'\t' read -r ok cfailed disc sent expected received lost dups conn_s sub_s st_s st_e start_s start_f p50 p99 p999 cp99 verdict <<<"$vals"
started=$(fmt '%.3f' "$start_s + 0.$start_f")
planned=$(jq -rn "$jqdefs"'('"$pairs"' * ($w + ("'"$hold"'" | secs)) / '"$every"') | floor' --argjson w "$warmup")
conn_plan=$("$bin" explain "${sets[@]}" "$plan" | awk '$1 == "connect" && $2 ~ /s$/ { print $2; exit }')
read -r wall ucpu scpu maxrss < <(tail -n 1 "$tmp/w.time")

say ""
say "   verdict     $verdict (exit $rc)"
say "   connected   $ok of $(( 2 * pairs )), $cfailed failed, $disc disconnects; all connected $(fmt '%.2f' "$conn_s") s after the start (plan: $conn_plan), subscribed at $(fmt '%.2f' "$sub_s") s; connect p99 $cp99"
say "   messages    sent $sent (planned $planned), expected $expected, received $received, lost $lost, duplicates $dups; latency p50 $p50, p99 $p99, p99.9 $p999"
for p in "${!name[@]}"; do
	say "   ${name[$p]}$(printf '%*s' $(( 11 - ${#name[$p]} )) '')peak RSS $(fmt '%.1f' "${rss[$p]:-0} / 1024") MiB, CPU $(fmt '%.2f' "${ticks[$p]:-0} / $clk_tck") s (pid $p)"
done | sort
say "   all mqplan  CPU $(fmt '%.2f' "$ucpu + $scpu") s (user $ucpu, sys $scpu, GNU time: the parent and its workers), $(fmt '%.1f' "$wall") s wall"
say "   Mosquitto   a: CPU $(fmt '%.2f' "($ca1 - $ca0) / $clk_tck") s, peak RSS $(fmt '%.1f' "$brss_a / 1024") MiB; b: CPU $(fmt '%.2f' "($cb1 - $cb0) / $clk_tck") s, peak RSS $(fmt '%.1f' "$brss_b / 1024") MiB"
other=$(fmt '%.2f' "($k1 - $k0 - $ca1 + $ca0 - $cb1 + $cb0) / $clk_tck - $ucpu - $scpu")
say "   other load  $other CPU-s used by other processes during the run$(busy_note "$other" "$wall")"

# Each broker's connection count from its own $SYS (less the watcher):
# its peak, its value through the steady phase (from 1 s after it began
# to 1 s before it ended, wall time), and after the run.
sys_counts() { # sys_counts FILE: peak, "held" (every value in the window), after
	awk -v lo="$(fmt '%.3f' "$started + $st_s + 1")" -v hi="$(fmt '%.3f' "$started + $st_e - 1")" '
		$2 ~ /clients\/connected$/ {
			v = $3 - 1
			if (v > peak) peak = v
			if ($1 <= lo) at = v
			else if ($1 <= hi) { if (held == "") held = at; if (v != at) held = "changed" }
			last = v
		}
		END { if (held == "") held = at; if (held == "") held = "none"; printf "%d %s %d\n", peak, held, last }' "$1"
}
read -r peak_a held_a after_a < <(sys_counts "$tmp/a.sys")
read -r peak_b held_b after_b < <(sys_counts "$tmp/b.sys")
ra1=$(sys_value "$tmp/a.sys" received) rb1=$(sys_value "$tmp/b.sys" received)
say "   \$SYS        a: $held_a connected through the steady phase (peak $peak_a, after $after_a), PUBLISH received +$(( ra1 - ra0 )); b: $held_b (peak $peak_b, after $after_b), +$(( rb1 - rb0 ))"

say ""
check "the run passed (exit 0)" "$rc == 0"
check "every client connected: $ok == $(( 2 * pairs )), none failed or disconnected" "$ok == 2 * $pairs && $cfailed == 0 && $disc == 0"
check "sent == planned == expected == received: $sent, $planned, $expected, $received" "$sent == $planned && $expected == $sent && $received == $sent"
check "lost 0, duplicates 0" "$lost == 0 && $dups == 0"
check "each broker held its half through the steady phase: $held_a + $held_b" "\"$held_a\" == $pairs && \"$held_b\" == $pairs"
check "the brokers' peaks sum to the plan's connections: $peak_a + $peak_b == $(( 2 * pairs ))" "$peak_a + $peak_b == 2 * $pairs"
check "every connection closed after the run: $after_a, $after_b" "$after_a == 0 && $after_b == 0"
check "the brokers received exactly what mqplan sent: $(( ra1 - ra0 + rb1 - rb0 )) == $sent" "$ra1 - $ra0 + $rb1 - $rb0 == $sent"

if (( ${#failures[@]} > 0 )); then
	say "bench: ${#failures[@]} check(s) failed" >&2
	exit 1
fi
say "bench: every check passed"
