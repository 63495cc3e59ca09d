# Supervision of the product's processes, sourced by bin/run (bash 5.1+).
#
#   supervise NAME LOG COMMAND [ARG...]   start COMMAND now; restart it whenever it exits
#                                         (LOG: a file its output is appended to, or - )
#   supervise_wait                        supervise until Ctrl-C or SIGTERM, then stop all
#
# Each child runs in a process group of its own (setsid), so Ctrl-C reaches only this
# shell, which sends each child SIGTERM and, after SUPERVISE_GRACE seconds (default 15),
# SIGKILLs what is left of its group: a Celery worker's pool and beat go with it. A child that exits
# is restarted after 1 s, doubling up to 30 s while it keeps dying within 30 s of its
# start. Stopping before supervise_wait (set -e, an error) stops the children too.
# A shell started with SIGINT ignored (a background job of a non-interactive shell, as
# `make test &` runs pytest) cannot trap it, by POSIX: there only SIGTERM stops it all.

command -v setsid >/dev/null || { echo "run: setsid (util-linux) is required" >&2; exit 1; }

declare -A _sv_command=() _sv_log=() _sv_pid=() _sv_started=() _sv_delay=()

supervise() {
  local name=$1 log=$2
  shift 2
  printf -v "_sv_command[$name]" '%q ' "$@"
  _sv_log[$name]=$log
  _sv_delay[$name]=1
  _sv_start "$name"
}

_sv_start() {
  local name=$1
  if [ "${_sv_log[$name]}" = - ]; then
    (eval "exec setsid ${_sv_command[$name]}") &
  else
    (eval "exec setsid ${_sv_command[$name]}") >>"${_sv_log[$name]}" 2>&1 &
  fi
  _sv_pid[$name]=$!
  _sv_started[$name]=$SECONDS
  echo "run: $name started (pid $!)"
}

_sv_name_of() {
  local name
  for name in "${!_sv_pid[@]}"; do
    if [ "${_sv_pid[$name]}" = "$1" ]; then echo "$name"; return; fi
  done
}

supervise_wait() {
  local name pid status delay sleeper
  while :; do
    # Wake when any child ends, or after a second at most: a child whose end bash has
    # already reported is no longer one `wait -n` waits for, so look at each of them.
    sleep 1 &
    sleeper=$!
    wait -n || true
    kill "$sleeper" 2>/dev/null || true
    for name in "${!_sv_pid[@]}"; do
      pid=${_sv_pid[$name]}
      kill -0 "$pid" 2>/dev/null && continue
      status=0
      wait "$pid" 2>/dev/null || status=$?
      _sv_restart "$name" "$status"
    done
  done
}

_sv_restart() {
  local name=$1 status=$2 pid=${_sv_pid[$1]} delay
  # What the dead child left in its group (a worker's pool, say) goes with it.
  kill -KILL -- "-$pid" 2>/dev/null || true
  if ((SECONDS - _sv_started[$name] >= 30)); then _sv_delay[$name]=1; fi
  delay=${_sv_delay[$name]}
  local where=${_sv_log[$name]/#-/the output above}
  echo "run: $name exited (status $status); restarting it in ${delay}s (see $where)" >&2
  sleep "$delay" &
  wait $! || true
  _sv_delay[$name]=$((delay * 2 > 30 ? 30 : delay * 2))
  _sv_start "$name"
}

# Signal a child's group, and the child itself in case it is not yet in a group of its
# own (just forked, before setsid). True when either existed.
_sv_signal() {
  local found=1
  kill "-$1" -- "-$2" 2>/dev/null && found=0
  kill "-$1" "$2" 2>/dev/null && found=0
  return $found
}

_sv_stop() {
  local code=${1:-$?} pid deadline pids
  trap - INT TERM EXIT
  ((${#_sv_pid[@]})) || exit "$code"
  # Every job of this shell too: the trap can run between a restart's fork and the line
  # that records the new child's pid, which _sv_pid then lacks.
  pids=("${_sv_pid[@]}" $(jobs -p))
  echo "run: stopping ${!_sv_pid[*]}" >&2
  # The leaders first, so that a worker can shut down its own pool (warm shutdown).
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  deadline=$((SECONDS + ${SUPERVISE_GRACE:-15}))
  for pid in "${pids[@]}"; do
    while _sv_signal 0 "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    _sv_signal KILL "$pid" || true
  done
  wait "${pids[@]}" 2>/dev/null || true
  exit "$code"
}

trap '_sv_stop 0' INT TERM
trap '_sv_stop' EXIT
