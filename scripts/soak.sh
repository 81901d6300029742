#!/bin/sh
# soak.sh: a closed-loop nolock run at full rate for SOAK_DURATION seconds
# (default 180), its resident memory (VmRSS) sampled every second. The
# figure at a time is the highest sample of the SOAK_WINDOW seconds
# (default 10) before it: a single sample lands anywhere on the garbage
# collector's sawtooth (tens of MB at full rate), its top does not. Fails
# if the figure at the end is more than 10% above the figure at one third
# of the run, or at minute 5 for a run longer than a quarter of an hour
# (minute 1 and minute 3 by default; minute 5 and minute 60 for
# SOAK_DURATION=3600); it may be below.
# Not part of make test: it takes the whole duration and both cores.
#
#   scripts/soak.sh                       # bin/lockbench, 3 minutes
#   LOCKBENCH_BIN=/tmp/lb SOAK_DURATION=45 scripts/soak.sh
set -eu

bin=${LOCKBENCH_BIN:-bin/lockbench}
duration=${SOAK_DURATION:-180}
window=${SOAK_WINDOW:-10}
first=$((duration / 3))
if [ "$duration" -gt 900 ]; then
	first=300
fi
# The last figure is taken 3 s before the load ends, while the run still
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

# VmRSS, and its parts: anonymous memory (what the program allocates) and
# file pages (of the binary and its libraries, which come and go with the
# page cache).
rss_kb() { awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { print (r ? r : 0), (a ? a : 0), (f ? f : 0) }' "/proc/$pid/status" 2>/dev/null || echo 0 0 0; }

start=$(date +%s)
now=0
while [ "$now" -lt "$last" ]; do
	sleep 1
	now=$(($(date +%s) - start))
	echo "$now $(rss_kb)" >>"$tmp/samples"
done
peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
if ! wait "$pid"; then
	echo "soak: lockbench run failed:" >&2
	cat "$tmp/stderr" >&2
	exit 1
fi
cat "$tmp/stdout"
awk -v t1="$first" -v t2="$last" -v w="$window" -v peak="$peak" '
	{ t = $1; r = $2
	  if (t > t1 - w && t <= t1 && r > a) a = r
	  if (t > t2 - w && t <= t2 && r > b) b = r
	  bucket = int((t - 1) / w); if (bucket > n) n = bucket
	  if (r > top[bucket]) { top[bucket] = r; anon[bucket] = $3; file[bucket] = $4 } }
	END {
		# a line per window, or per minute for a run over a quarter of an hour
		stride = (t2 > 900 && w < 60) ? int(60 / w) : 1
		print "t_s max_rss_kb anon_kb file_kb (the highest sample per " w * stride " s, with its parts)"
		for (i = 0; i <= n; i += stride) {
			m = 0; k = i
			for (j = i; j < i + stride && j <= n; j++) if (top[j] > m) { m = top[j]; k = j }
			printf "%d %d %d %d\n", (i + stride) * w, m, anon[k], file[k]
		}
		ratio = a > 0 ? b / a : 0
		printf "soak: RSS %d kB at %ds, %d kB at %ds (highest of the %d s before each): ratio %.3f (peak %d kB)\n", a, t1, b, t2, w, ratio, peak
		if (a <= 0 || ratio > 1.10) { print "soak: FAIL: want at most 10% growth"; exit 1 }
		print "soak: ok"
	}' "$tmp/samples"
