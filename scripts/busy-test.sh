#!/usr/bin/env bash
# busy-test.sh: runs a command (a go test command line, or make test) beside
# N CPU-bound processes it starts itself, so that a test that only passes on
# a quiet machine fails here first. Run it before you stop, on the packages
# your change touched.
#
#   scripts/busy-test.sh go test -race -count=5 ./loadgen/
#   BUSY=3 scripts/busy-test.sh make test
#
# BUSY: how many busy processes (default 2), each `sha256sum /dev/zero`.
# They are stopped when the command ends, whatever its outcome, and on
# Ctrl-C; only they are killed, by pid. Exits with the command's status.
set -u

busy=${BUSY:-2}
case $busy in
'' | *[!0-9]*)
	echo "busy-test.sh: BUSY=$busy: want a whole number of busy processes (0 or more)" >&2
	exit 2
	;;
esac
if [ $# -eq 0 ]; then
	echo "busy-test.sh: no command: want a command line to run, such as: go test ./loadgen/" >&2
	exit 2
fi

pids=()
cmd=
stop() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	pids=()
}
# The command runs in the background, so a signal to this script alone
# (SIGTERM from kill) is trapped at once, not when the command has ended,
# and is passed on as SIGTERM (a background command ignores SIGINT).
quit() {
	[ -n "$cmd" ] && kill -"$1" "$cmd" 2>/dev/null && wait "$cmd" 2>/dev/null
	stop
	exit "$2"
}
trap stop EXIT
trap 'quit TERM 130' INT
trap 'quit TERM 143' TERM

for _ in $(seq 1 "$busy"); do
	sha256sum /dev/zero >/dev/null &
	pids+=($!)
done
echo "busy-test.sh: $busy busy processes (pids ${pids[*]:-none}) beside: $*" >&2

start=$(date +%s)
"$@" &
cmd=$!
wait "$cmd"
rc=$?
cmd=
echo "busy-test.sh: exit $rc after $(($(date +%s) - start)) s beside $busy busy processes: $*" >&2
exit $rc
