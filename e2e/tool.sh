#!/bin/sh
# A scripted tool the fake model asks for: MARKS ID SECONDS RC. Writes "start ID TIME" and,
# however it ends (done, failed, interrupted), "end ID TIME" to MARKS: the truth of `executing`.
# A harness that kills the tool's group with SIGKILL (Copilot CLI on Ctrl+C) leaves no trap to
# run: a watcher in a session of its own writes the end once this shell is gone (a second end
# line after the trap's is ignored).
marks=$1 id=$2 seconds=$3 rc=$4
stamp() { printf '%s %s %s\n' "$1" "$id" "$(date +%s.%N)" >> "$marks"; }
stamp start
setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
printf "end %s %s\n" "$2" "$(date +%s.%N)" >> "$3"' watch $$ "$id" "$marks" </dev/null >/dev/null 2>&1 &
# Further signals are ignored while the end is written (and by `date`): Gemini CLI sends a second
# one while the first trap runs, which killed `date` and left "end ID " without a time.
trap 'trap "" INT TERM HUP; stamp end; exit 130' INT TERM HUP
sleep "$seconds" &
wait $!
echo "tool $id done"
stamp end
exit "$rc"
