#!/usr/bin/env python3
"""tests/gpu/emulation/launch.py IN.cu OUT.cpp — rewrites every kernel launch
`kernel<T><<<grid, threads, shmem, stream>>>(args...)` as
`emu_launch(grid, threads, shmem, stream, kernel<T>, args...)` (cuda_runtime_api.h), so g++ can
compile a .cu file. Writes OUT only when it changes (make then rebuilds only what changed)."""
import os
import re
import sys

src = open(sys.argv[1]).read()
out = re.sub(r'([A-Za-z_][A-Za-z_0-9]*(?:<[^<>;]*>)?)\s*<<<([^;]*?)>>>\s*\(', r'emu_launch(\2, \1, ', src)
if '<<<' in out:
    sys.exit(f'{sys.argv[1]}: a kernel launch launch.py cannot rewrite')
out = f'#line 1 "{sys.argv[1]}"\n' + out
if not os.path.exists(sys.argv[2]) or open(sys.argv[2]).read() != out:
    open(sys.argv[2], 'w').write(out)
