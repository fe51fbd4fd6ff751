#!/usr/bin/env bash
# bench/disturb.sh - a busy machine cannot fake a broker's latency.
#
#   bench/disturb.sh
#   DISTURB_RUNS=3 DISTURB_PLANS="plans/1to1-qos1.yaml plans/fanin-qos1.yaml" \
#     DISTURB_SET="duration=5s warmup=1s" bench/disturb.sh
#
# Part 1 runs each shipped plan (on the embedded broker, as shipped)
# DISTURB_RUNS times beside DISTURB_HOGS busy loops pinned on the CPUs
# mqplan is pinned on, and counts the verdicts. The goal: no FAIL; each run
# PASS, or INCONCLUSIVE (exit 4) with its evidence ("mqplan waited ... for a
# CPU"). Part 2 runs 1to1-qos1 DISTURB_RUNS times against `mqplan broker
# --delay 50ms`, without busy loops: the broker's own latency must FAIL
# every run (exit 1), never be excused as mqplan's.
#
# Environment (all optional):
#   DISTURB_RUNS    runs per plan and of part 2 (default 10)
#   DISTURB_PLANS   the plans of part 1 (default: every plans/*.yaml but
#                   soak and xmeter-100k, which run for an hour and 5 min)
#   DISTURB_SET     --set overrides for every run, space-separated
#                   (e.g. "duration=5s"); a plan that refuses one (exit 2)
#                   is counted INVALID
#   DISTURB_HOGS    busy loops per run (default 2)
#   DISTURB_CPUS    the CPUs mqplan and the busy loops are pinned on
#                   (default 0,1)
#   DISTURB_DELAY   the delaying broker's delay (default 50ms)
#   DISTURB_TIMEOUT bound of one run (default 300s)
#   BENCH_KEEP=1    keep the temporary directory (JSON results, tables)
#
# The busy loops compete with whatever else runs on the machine: the
# quieter the machine, the more the figures mean. Needs Go, jq, taskset
# and coreutils' timeout. Exits 0 when every run ran (whatever the
# verdicts), 1 when a step could not run.
set -euo pipefail
export LC_ALL=C

cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=${DISTURB_RUNS:-10}
hogs=${DISTURB_HOGS:-2}
cpus=${DISTURB_CPUS:-0,1}
delay=${DISTURB_DELAY:-50ms}
bound=${DISTURB_TIMEOUT:-300s}
if [[ -n ${DISTURB_PLANS:-} ]]; then
	read -r -a plans <<<"$DISTURB_PLANS"
else
	plans=()
	for f in plans/*.yaml; do
		case $f in plans/soak.yaml | plans/xmeter-100k.yaml) continue ;; esac
		plans+=("$f")
	done
fi
sets=()
for s in ${DISTURB_SET:-}; do sets+=(--set "$s"); done

for tool in go jq taskset timeout; do
	command -v "$tool" >/dev/null || { echo "bench/disturb.sh: needs $tool" >&2; exit 1; }
done

tmp=$(mktemp -d)
hogpids=()
brokerpid=
cleanup() {
	local p
	for p in "${hogpids[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -n $brokerpid ]] && kill "$brokerpid" 2>/dev/null || true
	if [[ ${BENCH_KEEP:-} == 1 ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$tmp/mqplan" ./cmd/mqplan

# hogs_start: DISTURB_HOGS busy loops pinned on the CPUs, each bounded.
hogs_start() {
	local i
	hogpids=()
	for ((i = 0; i < hogs; i++)); do
		timeout "$bound" taskset -c "$cpus" sh -c 'while :; do :; done' &
		hogpids+=("$!")
	done
}
hogs_stop() {
	local p
	for p in "${hogpids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	hogpids=()
}

# verdict_of CODE: the verdict an exit code gives.
verdict_of() {
	case $1 in
	0) echo PASS ;; 1) echo FAIL ;; 2) echo INVALID ;; 3) echo INCOMPLETE ;; 4) echo INCONCLUSIVE ;; *) echo "EXIT-$1" ;;
	esac
}

declare -A count
failed=0
echo "== part 1: each plan $runs times beside $hogs busy loops on CPUs $cpus"
for plan in "${plans[@]}"; do
	name=$(basename "$plan" .yaml)
	for ((i = 1; i <= runs; i++)); do
		out=$tmp/$name-hog-$i
		hogs_start
		code=0
		timeout "$bound" taskset -c "$cpus" "$tmp/mqplan" run --quiet "${sets[@]}" --json "$out.json" "$plan" >"$out.txt" 2>&1 || code=$?
		hogs_stop
		v=$(verdict_of "$code")
		count[$name,$v]=$(( ${count[$name,$v]:-0} + 1 ))
		evidence=
		if [[ -s $out.json ]]; then
			evidence=$(jq -r '[.disturbance // {} | "disturbed \(.disturbed // 0)/\(.seconds // 0)s, cpu_wait \(.cpu_wait // "-"), lag_p99 \(.lag_p99 // "-")"] | .[0]' "$out.json")
		fi
		printf '%-16s run %2d: %-12s %s\n' "$name" "$i" "$v" "$evidence"
		case $v in
		FAIL) grep -E '^FAIL' "$out.txt" | sed 's/^/    /' || true ;;
		INCONCLUSIVE) grep -q 'INCONCLUSIVE: mqplan waited' "$out.txt" || { echo "    no evidence in the verdict line"; failed=1; } ;;
		INCOMPLETE | INVALID | EXIT-*) tail -3 "$out.txt" | sed 's/^/    /' ;;
		esac
	done
done

echo "== part 2: 1to1-qos1 $runs times against mqplan broker --delay $delay, no busy loops"
"$tmp/mqplan" broker --listen 127.0.0.1:0 --delay "$delay" 2>"$tmp/broker.err" &
brokerpid=$!
url=
for ((i = 0; i < 100; i++)); do
	url=$(grep -o 'mqtt://127\.0\.0\.1:[0-9]*' "$tmp/broker.err" || true)
	[[ -n $url ]] && break
	sleep 0.1
done
[[ -n $url ]] || { echo "bench/disturb.sh: the delaying broker did not start: $(cat "$tmp/broker.err")" >&2; exit 1; }
for ((i = 1; i <= runs; i++)); do
	out=$tmp/delay-$i
	code=0
	timeout "$bound" "$tmp/mqplan" run --quiet "${sets[@]}" --broker "$url" --json "$out.json" plans/1to1-qos1.yaml >"$out.txt" 2>&1 || code=$?
	v=$(verdict_of "$code")
	count[delay,$v]=$(( ${count[delay,$v]:-0} + 1 ))
	printf '%-16s run %2d: %-12s %s\n' "delay-$delay" "$i" "$v" "$(grep -E '^(PASS|FAIL|INCONCLUSIVE|INCOMPLETE)' "$out.txt" | head -1)"
done

echo "== summary (verdict counts)"
for plan in "${plans[@]}" delay; do
	name=$(basename "$plan" .yaml)
	line=
	for v in PASS INCONCLUSIVE FAIL INCOMPLETE INVALID; do
		n=${count[$name,$v]:-0}
		[[ $n -gt 0 ]] && line+=" $v $n"
	done
	printf '%-16s%s\n' "$name" "$line"
done
exit "$failed"
