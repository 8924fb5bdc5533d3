#!/bin/sh
# A scripted tool the fake model asks for: MARKS ID SECONDS RC. Writes "start ID TIME" and,
# however it ends (done, failed, interrupted), "end ID TIME" to MARKS: the truth of `executing`.
# The start line also names this shell's pid: a harness that stops the tool with SIGKILL
# (Codex on Esc) leaves no end line, and the e2e poller sees the pid vanish instead.
marks=$1 id=$2 seconds=$3 rc=$4
stamp() { printf '%s %s %s%s\n' "$1" "$id" "$(date +%s.%N)" "$2" >> "$marks"; }
stamp start " $$"
trap 'stamp end; exit 130' INT TERM HUP
sleep "$seconds" &
wait $!
echo "tool $id done"
stamp end
exit "$rc"
