#!/bin/sh
# A scripted tool the fake model asks for: MARKS ID SECONDS RC [COMMAND...]. Writes "start ID TIME"
# and, however it ends (done, failed, interrupted), "end ID TIME" to MARKS: the truth of `executing`.
# SECONDS "hold" runs until the driver creates MARKS.go.ID (at most 10 minutes); a COMMAND (a
# child harness) runs instead of the sleep, and its status is the tool's.
# A harness that kills the tool's group with SIGKILL (Copilot CLI on Ctrl+C) leaves no trap to
# run: a watcher in a session of its own writes the end once this shell is gone (a second end
# line after the trap's is ignored).
marks=$1 id=$2 seconds=$3 rc=$4
shift 4
# The start line also names this shell's pid: a harness that stops the tool with SIGKILL
# (Codex on Esc) leaves no end line, and the e2e poller sees the pid vanish instead.
stamp() { printf '%s %s %s%s\n' "$1" "$id" "$(date +%s.%N)" "$2" >> "$marks"; }
stamp start " $$"
setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
printf "end %s %s\n" "$2" "$(date +%s.%N)" >> "$3"' watch $$ "$id" "$marks" </dev/null >/dev/null 2>&1 &
# Further signals are ignored while the end is written (and by `date`): Gemini CLI sends a second
# one while the first trap runs, which killed `date` and left "end ID " without a time.
trap 'trap "" INT TERM HUP; stamp end; exit 130' INT TERM HUP
if [ $# -gt 0 ]; then
  "$@" </dev/null &
elif [ "$seconds" = hold ]; then
  sh -c 'n=0; while [ ! -e "$1" ] && [ $n -lt 6000 ]; do sleep 0.1; n=$((n + 1)); done' hold "$marks.go.$id" &
else
  sleep "$seconds" &
fi
wait $!
status=$?
echo "tool $id done"
stamp end
[ $# -gt 0 ] && exit "$status"
exit "$rc"
