#!/bin/sh
# A scripted tool the fake model asks for: MARKS ID SECONDS RC. Writes "start ID TIME" and,
# however it ends (done, failed, interrupted), "end ID TIME" to MARKS: the truth of `executing`.
marks=$1 id=$2 seconds=$3 rc=$4
stamp() { printf '%s %s %s\n' "$1" "$id" "$(date +%s.%N)" >> "$marks"; }
stamp start
# Further signals are ignored while the end is written (and by `date`): Gemini CLI sends a second
# one while the first trap runs, which killed `date` and left "end ID " without a time.
trap 'trap "" INT TERM HUP; stamp end; exit 130' INT TERM HUP
sleep "$seconds" &
wait $!
echo "tool $id done"
stamp end
exit "$rc"
