#!/bin/sh
# labs/expect_cannot_run.sh COMMAND... — runs a lab with --device cuda among its arguments and
# passes when it exits 3 naming cuda (no usable GPU here: the environment cannot run it), or, on a
# machine with a GPU, when it runs there (exit status 0, its first line "device: cuda ...").
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 5
if [ "$rc" -eq 3 ]; then printf '%s\n' "$out" | grep -q cuda && exit 0; fi
if [ "$rc" -eq 0 ]; then printf '%s\n' "$out" | grep -q '^device: cuda' && exit 0; fi
echo "expect_cannot_run: exit status $rc, wanted 3 (no GPU) or 0 (on the GPU)"
exit 1
