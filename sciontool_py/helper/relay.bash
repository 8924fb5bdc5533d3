#!/bin/bash
# sciontool-py's shell relay: `bash relay.bash PROGRAM... hook ARGS...` (docs/receiver.md).
#
# What `harness install` wires on Linux. A Python start costs a hook more than
# all its work, and the harness waits for every hook, so this shell asks HOME's
# helper (sciontool_py/helper/bash.py) to run the hook instead, and
# hands it the envelope. Anything else (no helper, a stale or planted address
# file, a refusal, a helper slow to take the hook) runs the hook as given,
# with stdin untouched.
trap '' PIPE # a helper gone mid-way must not kill this shell before its fallback
f=${HOME:-/home/scion}/.scion/relay
# A stopped or stuck helper costs the hook at most 5 s in all: 2 s for `ready`, the rest (from
# when it began) for the answer. A helper that is not the file's (its pid gone or reused, its
# start time another) or is stopped is passed at once.
began=${EPOCHREALTIME/[.,]/}
if [[ -f $f && ! -L $f ]] && read -r -t 1 -n 256 port pid start served token <"$f" 2>/dev/null &&
	[[ $port =~ ^[0-9]{1,5}$ && $pid =~ ^[0-9]{1,10}$ && -O /proc/$pid ]] &&
	read -r -t 1 -a stat </proc/$pid/stat 2>/dev/null && [[ ${stat[21]} == "$start" ]]; then
	if [[ ${stat[2]} != [tT] ]] && { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null &&
		printf '%s\0' relay2 "$token" "$$" "$#" "$@" >&3 2>/dev/null &&
		read -r -t 2 -u 3 proof word data 2>/dev/null && [[ $proof == "$served" && $word == ready ]]; then
		# From here the hook is the helper's: the envelope goes to it (none from a terminal).
		if [[ $data == - ]]; then
			printf 'go\n' >&3 2>/dev/null
		elif [[ -t 0 ]]; then
			printf '%s\n' "$token" 2>/dev/null >"/dev/tcp/127.0.0.1/$data"
		else
			# In the background, where a shell gives a job /dev/null for stdin: the envelope is on 4.
			{ exec 4<&0; } 2>/dev/null
			{ printf '%s\n' "$token" && exec cat <&4 4<&-; } 2>/dev/null >"/dev/tcp/127.0.0.1/$data" &
		fi
		# The answer needs no proof of its own: it comes on the connection the ready proved.
		now=${EPOCHREALTIME/[.,]/}
		left=$((${began:-0} + 5000000 - ${now:-0}))
		((left > 0)) || left=1
		printf -v left '%d.%06d' $((left / 1000000)) $((left % 1000000))
		if read -r -t "$left" -u 3 code out err open 2>/dev/null && [[ $code == [01] &&
			$out =~ ^[0-9]{1,9}$ && $err =~ ^[0-9]{1,9}$ ]]; then
			if [[ $open == open && -n ${!-} ]]; then
				kill "$!" 2>/dev/null # our cat, blocked on a stdin its harness never closes
			fi
			# Bytes, not characters; the hook writes no NUL, the one byte a shell cannot hold.
			if ((out)) && LC_ALL=C IFS= read -r -d '' -N "$out" -t 1 -u 3 text; then
				printf '%s' "$text"
			fi
			if ((err)) && LC_ALL=C IFS= read -r -d '' -N "$err" -t 1 -u 3 text; then
				printf '%s' "$text" >&2
			fi
			exit "$code"
		fi
		printf 'sciontool hook: the resident helper took the hook but gave no exit status (it stopped, or took over 5 s)\n' >&2
		exit 1
	fi
	exec 3>&-
	# The helper did not take the hook (it is stopped, stuck or leaving, or declined): the hook's
	# Python relay does not ask it again.
	export SCIONTOOL_HELPER_PASSED=1
fi
trap - PIPE
exec "$@"
