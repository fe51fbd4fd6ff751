#!/usr/bin/env bash
# bench/merged.sh - one process against mqplan run --workers N, the same
# plans against one Mosquitto (see bench/README.md, "Merged and single").
#
#   bench/merged.sh       # about 2.5 minutes
#
# Runs plans/xmeter-100k.yaml scaled down with --set to what one process
# holds here (MERGED_PAIRS publishers and as many subscribers, 1-to-1,
# QoS 1, 1 KB, 2 msg/s each) as one process, with --workers 2 and with
# --workers 4, and plans/1to1-qos1.yaml as one process and with --workers
# 2, each against the same Mosquitto, one run at a time. Prints a
# Markdown table of every count, the latency percentiles and the CPU
# seconds of mqplan (parent and workers, GNU time) and of the broker, and
# exits 1 when a run did not complete or when a count differs between the
# runs of one plan (connected, sent, expected, received; lost and
# duplicates must be 0). Latency comes from separate runs on a shared
# machine: it is compared, not required equal, and a verdict FAIL from a
# latency threshold (xmeter's p99 < 50ms on two busy cores) is a result.
# "other CPU-s" is what the rest of the machine used during each run
# (/proc/stat less mqplan and the broker): above a few seconds, the
# latency and CPU columns are disturbed.
#
# Environment (all optional):
#   MERGED_PAIRS      xmeter publishers (= subscribers), default 2500: 5,000
#                     msg/s, which two shared cores carry with the broker
#                     (at 5000 the one-process run fell behind on a busy
#                     machine: p50 2.3 s, 164 messages unsent)
#   MERGED_DURATION   steady phase of each run, default 15s
#   BENCH_MOSQUITTO   mosquitto binary (default: on PATH or /usr/sbin)
#   BENCH_KEEP=1      keep the temporary directory (JSON reports)
set -euo pipefail
export LC_ALL=C

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start merged

need_tools go jq timeout getconf awk
find_mosquitto
[[ -n $mosquitto ]] || die "mosquitto is needed (apt-get install mosquitto)"

pairs=${MERGED_PAIRS:-2500}
duration=${MERGED_DURATION:-15s}
raise_nofile
build_mqplan
start_mosquitto m
say "bench/merged.sh at $rev, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, Mosquitto $mosq_version (pid $mosq_pid, port $mosq_port)"

# one NAME WORKERS ARGS...: one run (WORKERS 0: one process), its figures
# in $tmp/NAME.row (tab-separated), its exit status in $tmp/NAME.rc.
one() {
	local name=$1 w=$2 rc=0 b0 b1 wflag=()
	shift 2
	(( w > 0 )) && wflag=(--workers "$w")
	say "  $name ..."
	b0=$(cputicks "$mosq_pid")
	k0=$(busyticks)
	timeout -k 10 170 /usr/bin/time -f '%e %U %S' -o "$tmp/$name.time" \
		"$bin" run --quiet "${wflag[@]}" --json "$tmp/$name.json" --broker "mqtt://127.0.0.1:$mosq_port" \
		--set "duration=$duration" "$@" >"$tmp/$name.txt" 2>"$tmp/$name.err" || rc=$?
	b1=$(cputicks "$mosq_pid")
	k1=$(busyticks)
	echo "$rc" >"$tmp/$name.rc"
	if [[ ! -s $tmp/$name.json ]]; then
		say "bench: $name did not complete (exit $rc):" >&2
		tail -n 10 "$tmp/$name.err" >&2 || true
		return 1
	fi
	read -r wall u s < <(tail -n 1 "$tmp/$name.time")
	jq -r "$jqdefs"'[(.metrics.top["connect.ok"] // 0), allsum("sent"), allsum("expected"), allsum("received"),
		allsum("lost"), allsum("duplicates"), dur("latency.p50"), dur("latency.p99"), dur("latency.p999"), .verdict] | @tsv' \
		"$tmp/$name.json" | tr -d '\n' >"$tmp/$name.row"
	printf '\t%s\t%s\t%s\t%s\n' "$(fmt '%.2f' "$u + $s")" "$(fmt '%.2f' "($b1 - $b0) / $clk_tck")" "$(fmt '%.1f' "$wall")" \
		"$(fmt '%.1f' "($k1 - $k0 - $b1 + $b0) / $clk_tck - $u - $s")" >>"$tmp/$name.row"
}

xm=(--set "groups.sub.count=$pairs" --set "groups.pub.count=$pairs" --set warmup=2s --set ramp=3s --set drain=5s plans/xmeter-100k.yaml)
oo=(plans/1to1-qos1.yaml)
say "running, one at a time:"
one xmeter-single 0 "${xm[@]}"
one xmeter-workers2 2 "${xm[@]}"
one xmeter-workers4 4 "${xm[@]}"
one 1to1-single 0 "${oo[@]}"
one 1to1-workers2 2 "${oo[@]}"

failures=()
say ""
say "| plan | processes | verdict | connected | sent | expected | received | lost | dup | p50 | p99 | p99.9 | mqplan CPU-s | Mosquitto CPU-s | wall s | other CPU-s |"
say "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for name in xmeter-single xmeter-workers2 xmeter-workers4 1to1-single 1to1-workers2; do
	IFS=$'\t' read -r ok sent exp recv lost dup p50 p99 p999 verdict cpu bcpu wall other <"$tmp/$name.row"
	plan=${name%%-*} mode=${name#*-}
	label=$plan
	[[ $plan == xmeter ]] && label="xmeter-100k, $pairs + $pairs"
	say "| $label | ${mode/workers/--workers } | $verdict | $ok | $sent | $exp | $recv | $lost | $dup | $p50 | $p99 | $p999 | $cpu | $bcpu | $wall | $other |"
	# A latency threshold may fail on a busy machine: a result, not a
	# mismatch. A run that did not complete is.
	[[ $verdict == PASS || $verdict == FAIL ]] || failures+=("$name: verdict $verdict")
	(( lost == 0 && dup == 0 )) || failures+=("$name: lost $lost, duplicates $dup")
	counts="$ok $sent $exp $recv"
	first_var=first_$plan
	if [[ -z ${!first_var:-} ]]; then
		printf -v "$first_var" '%s' "$counts"
	elif [[ ${!first_var} != "$counts" ]]; then
		failures+=("$name: connected/sent/expected/received $counts, one process: ${!first_var}")
	fi
done
say ""
if (( ${#failures[@]} > 0 )); then
	printf 'bench: MISMATCH %s\n' "${failures[@]}" >&2
	exit 1
fi
say "bench: every run completed and every count equals the one-process run's"
