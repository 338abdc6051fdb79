#!/usr/bin/env bash
# tests/mpi/expect-abort.sh MPIEXEC DP_CHECK throw|kill — a rank that fails (an error, or killed)
# ends the whole 2-rank job: non-zero, within 30 seconds, and the output names the failed rank.
# The other rank is then waiting in a collective for it, so without the abort the job would hang.
set -u
mpiexec=$1 prog=$2 how=$3
start=$(date +%s%N)
out=$(timeout 90 "$mpiexec" -np 2 --oversubscribe "$prog" --fail-rank 1 --fail-step 3 --fail-how "$how" --steps 500 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
printf '%s\n' "$out" | tail -n 15
echo "expect-abort ($how): exit status $rc after $ms ms"
bad() { echo "expect-abort ($how): $*" >&2; exit 1; }
[[ $rc -ne 0 ]] || bad "the job exited 0 although rank 1 failed"
[[ $rc -ne 124 ]] || bad "the job hung: still running after 90 s"
(( ms < 30000 )) || bad "the job took $ms ms to end (more than 30 s)"
if [[ $how == throw ]]; then
  grep -q "error on rank 1 of 2 (mpi): dp_check: the failure asked for" <<< "$out" || bad "no message naming rank 1"
else
  grep -Eq "rank 1 .*(signal 9|Killed)" <<< "$out" || bad "no message naming rank 1 and its signal"
fi
echo "expect-abort ($how): the job ended as it should"
