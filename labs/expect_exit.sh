#!/bin/sh
# labs/expect_exit.sh WANT REGEX COMMAND... — runs COMMAND and passes when its exit status is WANT
# ("nonzero" for any but 0) and its output (stdout and stderr) matches the extended REGEX. For the
# lab tests whose point is the exit status as well as the words.
want=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 40
if [ "$want" = nonzero ]; then [ "$rc" -ne 0 ] || { echo "expect_exit: exit status 0, wanted nonzero"; exit 1; }
else [ "$rc" -eq "$want" ] || { echo "expect_exit: exit status $rc, wanted $want"; exit 1; }; fi
printf '%s\n' "$out" | grep -Eq -- "$regex" || { echo "expect_exit: no line matches: $regex"; exit 1; }
