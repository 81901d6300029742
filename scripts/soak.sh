#!/bin/sh
# soak.sh: a closed-loop nolock run at full rate for SOAK_DURATION seconds
# (default 180), its resident memory (VmRSS) sampled every SOAK_EVERY
# seconds (default 10); fails if the RSS at the end is more than 10% above
# the RSS at one third of the run (minute 1 and minute 3 by default). (It
# may be below: the Go runtime returns memory it no longer needs.)
# Not part of make test: it takes the whole duration and both cores.
#
#   scripts/soak.sh                       # bin/lockbench, 3 minutes
#   LOCKBENCH_BIN=/tmp/lb SOAK_DURATION=30 scripts/soak.sh
set -eu

bin=${LOCKBENCH_BIN:-bin/lockbench}
duration=${SOAK_DURATION:-180}
every=${SOAK_EVERY:-10}
first=$((duration / 3))
# The last sample is taken 3 s before the load ends, while the run still
# offers payments (not while it writes its report).
last=$((duration - 3))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" run --strategy nolock --instances 1 --deliveries 1 --hold 0 \
	--duration "${duration}s" --out "$tmp/run" >"$tmp/stdout" 2>"$tmp/stderr" &
pid=$!
# An interrupted soak takes its run with it.
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0; }

t=0
at_first=0
at_last=0
echo "t_s rss_kb"
while [ "$t" -lt "$last" ]; do
	step=$every
	for mark in "$first" "$last"; do
		if [ "$t" -lt "$mark" ] && [ $((t + step)) -gt "$mark" ]; then
			step=$((mark - t))
		fi
	done
	sleep "$step"
	t=$((t + step))
	r=$(rss_kb)
	echo "$t $r"
	if [ "$t" -eq "$first" ]; then at_first=$r; fi
	if [ "$t" -eq "$last" ]; then at_last=$r; fi
done
peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
if ! wait "$pid"; then
	echo "soak: lockbench run failed:" >&2
	cat "$tmp/stderr" >&2
	exit 1
fi
cat "$tmp/stdout"
awk -v a="$at_first" -v b="$at_last" -v t1="$first" -v t2="$last" -v peak="$peak" 'BEGIN {
	ratio = b / a
	printf "soak: RSS %d kB at %ds, %d kB at %ds: ratio %.3f (peak %d kB)\n", a, t1, b, t2, ratio, peak
	if (a <= 0 || ratio > 1.10) { print "soak: FAIL: want at most 10% growth"; exit 1 }
	print "soak: ok"
}'
