#!/usr/bin/env bash
# bench/workers.sh - the CPU cost of `mqplan run --workers N` against one
# process (issue 11's target: --workers 2 of 1to1-qos1 at most 5 % more CPU
# than one process). See bench/README.md, "--workers overhead".
#
#   bench/workers.sh                                    # 3 rounds of: one, w2, w1
#   WORKERS_MODES="one w2 h2" WORKERS_ROUNDS=5 bench/workers.sh
#   WORKERS_MODES="w2@/tmp/old w2@/tmp/new" bench/workers.sh   # A/B of two builds
#
# One Mosquitto (its defaults, loopback, no log) serves every run. Each
# round runs every mode once, in order, so that the modes alternate in the
# same window of the shared machine. A mode is
#   one    a single process
#   wN     --workers N (N children and their coordinator)
#   pN     a single process with --procs N
#   hN     N independent single processes started together, each with 1/N
#          of the pairs (groups sub and pub, as in 1to1-qos1) on topics and
#          client ids of its own: N runtimes with no coordination at all,
#          the control for wN
# optionally followed by +cpuLIST (run under `taskset -c LIST`) and by
# @BINARY (a prebuilt mqplan; default: this tree, built once).
#
# Per run: the CPU of the whole mqplan process tree (GNU time: each
# process and the children it waited for, exact), the parent's own CPU and
# each child's (/proc/PID/stat utime+stime, sampled every 0.1 s: the last
# sample before each exits, so up to 0.1 s of a process's end is missed
# and shows as "tail" = tree - parent - children), Mosquitto's CPU over the
# same window, "other": what the rest of the machine used meanwhile
# (/proc/stat busy time minus both), the tree's voluntary and involuntary
# context switches (GNU time: every thread, waited children included),
# deliveries from --json (received summed over every phase), and CPU-s per
# 100k delivered. Then the medians per mode, of the runs in which every
# message was delivered (a run the machine's load made lose messages is
# shown and not counted: a generator behind its schedule batches its work
# and costs less per message, which is not comparable).
#
# Environment (all optional):
#   WORKERS_MODES     modes run each round, in order (default "one w2 w1")
#   WORKERS_ROUNDS    rounds (default 3)
#   WORKERS_EVERY     each publisher's interval (default 5ms: 20,000 msg/s,
#                     with warmup 1s, no ramp, drain 3s); "plan": the plan as
#                     it is (1to1-qos1: 200 msg/s, warmup 2s, ramp 3s, 20s, drain 5s)
#   WORKERS_DURATION  steady phase (default 10s)
#   WORKERS_PLAN      plan (default plans/1to1-qos1.yaml)
#   WORKERS_ENV       extra environment for mqplan, e.g. "GODEBUG=schedtrace=1000"
#   BENCH_MOSQUITTO   the broker binary (default: mosquitto on PATH, /usr/sbin)
#   BENCH_KEEP=1      keep the temporary directory (JSON reports, samples)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")/.."

modes=(${WORKERS_MODES:-one w2 w1})
rounds=${WORKERS_ROUNDS:-3}
every=${WORKERS_EVERY:-5ms}
duration=${WORKERS_DURATION:-10s}
plan=${WORKERS_PLAN:-plans/1to1-qos1.yaml}
extra_env=(${WORKERS_ENV:-})

# shellcheck source=bench/lib.sh
. bench/lib.sh
need_tools go jq timeout awk
find_mosquitto
[[ -n $mosquitto ]] || die "mosquitto is needed (apt-get install mosquitto)"
bench_start wbench
build_mqplan
: >"$tmp/results"
start_mosquitto workers || die "could not start mosquitto"
port=$mosq_port
run_pid=

# run MODE ROUND: one run; prints its line and appends to $tmp/results.
run() {
	local mode=$1 r=$2 bin=$bin n=1 args=() i pin=()
	if [[ $mode == *@* ]]; then bin=${mode#*@}; fi
	local m=${mode%%@*}
	if [[ $m == *+cpu* ]]; then pin=(taskset -c "${m#*+cpu}") m=${m%%+cpu*}; fi
	case $m in
	one) ;;
	w[0-9]*) args=(--workers "${m:1}") ;;
	p[0-9]*) args=(--procs "${m:1}") ;;
	h[0-9]*) n=${m:1} ;;
	*) echo "workers.sh: mode $mode: want one, wN, pN or hN" >&2; return ;;
	esac
	local out=$tmp/$r.${mode//[\/@+]/_}
	local common=(--quiet --broker "mqtt://127.0.0.1:$port")
	if [[ $every != plan ]]; then
		common+=(--set "groups.pub.publish.every=$every" --set warmup=1s --set ramp=0s --set "duration=$duration" --set drain=3s)
	fi
	# One script for the run's session: each process under GNU time.
	: >"$out.sh"
	for (( i = 0; i < n; i++ )); do
		local cmd=("$bin" run "${common[@]}" "${args[@]}" --json "$out.$i.json")
		if (( n > 1 )); then
			# hN: N independent single processes, each with 1/N of the
			# pairs on topics and client ids of its own: two runtimes
			# with no coordination at all.
			cmd+=(--set "groups.sub.count=$(( 100 / n ))" --set "groups.pub.count=$(( 100 / n ))"
				--set "groups.sub.client_id=h$i-sub-%i" --set "groups.pub.client_id=h$i-pub-%i"
				--set "groups.sub.subscribe.topic=h$i/%i" --set "groups.pub.publish.topic=h$i/%i")
		fi
		printf '/usr/bin/time -f "%%e %%U %%S %%w %%c" -o %q %s >%q 2>&1 &\n' "$out.$i.time" "$(printf '%q ' "${pin[@]}" "${cmd[@]}" "$plan")" "$out.$i.log" >>"$out.sh"
	done
	echo 'wait' >>"$out.sh"
	local b0 m0
	b0=$(busyticks) m0=$(cputicks "$mosq_pid")
	setsid env "${extra_env[@]}" timeout 120 bash "$out.sh" &
	run_pid=$!
	runs+=("$run_pid")
	# Sample every mqplan process of the run's session: CPU ticks and
	# parent, the last sample before each exits.
	local name p k pp
	name=$(basename "$bin" | cut -c1-15)
	declare -A last=() ppid=()
	while kill -0 "$run_pid" 2>/dev/null; do
		for p in $(pgrep -s "$run_pid" -x "$name"); do
			k=$(cputicks "$p") || continue
			last[$p]=$k
			if [[ -z ${ppid[$p]:-} ]]; then
				pp=
				read -r pp 2>/dev/null <"/proc/$p/stat" && pp=${pp##*) } && ppid[$p]=${pp#* } && ppid[$p]=${ppid[$p]%% *}
			fi
		done
		sleep 0.1
	done
	wait "$run_pid"
	untrack "$run_pid"
	run_pid=
	local m1 b1
	m1=$(cputicks "$mosq_pid") b1=$(busyticks)
	local user=0 sys=0 vol=0 inv=0 recv=0 exp=0 lost=0 rc=0 t u s w v a b c
	for (( i = 0; i < n; i++ )); do
		if [[ ! -s $out.$i.json ]]; then
			echo "round $r $mode: no report: $(tail -n 3 "$out.$i.log")"
			return
		fi
		read -r t u s w v < <(tail -n 1 "$out.$i.time") # after "Command exited with non-zero status"
		grep -q 'non-zero status' "$out.$i.time" && rc=$(sed -n 's/.*status \([0-9]*\).*/\1/p' "$out.$i.time")
		read -r a b c < <(jq -r '[([.metrics.phases[] | .received // 0] | add), ([.metrics.phases[] | .expected // 0] | add), ([.metrics.phases[] | .lost // 0] | add)] | @tsv' "$out.$i.json")
		user=$(awk -v x="$user" -v y="$u" 'BEGIN { print x + y }') sys=$(awk -v x="$sys" -v y="$s" 'BEGIN { print x + y }')
		recv=$(( recv + a )) exp=$(( exp + b )) lost=$(( lost + c )) vol=$(( vol + w )) inv=$(( inv + v ))
	done
	# Top processes (their parent is not mqplan) and children.
	local tops=0 kids=0 toplist="" kidlist=""
	for p in "${!last[@]}"; do
		local sec
		sec=$(awk -v t="${last[$p]}" -v h="$clk_tck" 'BEGIN { printf "%.2f", t / h }')
		if [[ -n ${last[${ppid[$p]:-x}]:-} ]]; then
			kids=$(( kids + last[$p] )) kidlist+=" $sec"
		else
			tops=$(( tops + last[$p] )) toplist+=" $sec"
		fi
	done
	local tree line
	tree=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
	line=$(awk -v tree="$tree" -v par="$tops" -v kids="$kids" -v h="$clk_tck" -v recv="$recv" \
		-v mos="$(( m1 - m0 ))" -v bz="$(( b1 - b0 ))" 'BEGIN {
		other = (bz - mos) / h - tree
		printf "tree %.2f parent %.2f children %.2f tail %.2f | mosquitto %.2f other %.2f | per 100k %.3f",
			tree, par / h, kids / h, tree - (par + kids) / h, mos / h, other, tree * 100000 / recv }')
	printf 'round %s %-6s %s | recv %s exp %s lost %s | exit %s | CPU-s each:%s /%s | context switches voluntary %s involuntary %s\n' \
		"$r" "$mode" "$line" "$recv" "$exp" "$lost" "$rc" "$toplist" "${kidlist:- -}" "$vol" "$inv"
	if (( lost == 0 && recv == exp )); then
		printf '%s %s %s\n' "$mode" "$(awk -v t="$tree" -v r="$recv" 'BEGIN { printf "%.4f", t * 100000 / r }')" "$tree" >>"$tmp/results"
	else
		echo "round $r $mode: not counted in the medians: messages lost (the machine's load?)"
	fi
}

# From here a failed step is reported, never the end of the measurement.
set +e
trap 'echo "workers.sh: line $LINENO failed (status $?)" >&2' ERR
echo "workers.sh: $plan, every $every, steady $([[ $every == plan ]] && echo "as planned" || echo "$duration"), Mosquitto :$port; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for (( r = 1; r <= rounds; r++ )); do
	echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
	for m in "${modes[@]}"; do run "$m" "$r"; done
done
echo "medians (CPU-s per 100k delivered, tree CPU-s):"
for m in "${modes[@]}"; do
	awk -v m="$m" '$1 == m { a[++n] = $2; b[n] = $3 }
	function med(x, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
	END { if (n) printf "  %-6s %.3f per 100k, %.2f CPU-s (%d runs)\n", m, med(a, n), med(b, n), n }' "$tmp/results"
done
