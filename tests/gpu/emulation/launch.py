#!/usr/bin/env python3
"""tests/gpu/emulation/launch.py IN.cu OUT.cpp — rewrites every kernel launch
`kernel<T><<<grid, threads, shmem, stream>>>(args...)` as
`emu_launch({"kernel<T>", __FILE__, __LINE__}, grid, threads, shmem, stream, kernel<T>, args...)`
(cuda_runtime_api.h), so g++ can compile a .cu file and the emulator can name the kernel and its
launch in a report. Line breaks are kept, so every line keeps its number in IN. Writes OUT only
when it changes (make then rebuilds only what changed)."""
import os
import re
import sys

src = open(sys.argv[1]).read()
launch = re.compile(r'([A-Za-z_][A-Za-z_0-9]*(?:<[^<>;]*>)?)(\s*)<<<([^;]*?)>>>(\s*)\(')


def rewrite(m):
    kernel, before, config, after = m.group(1), m.group(2), m.group(3), m.group(4)
    breaks = '\n' * (before.count('\n') + after.count('\n') + kernel.count('\n'))
    name = ' '.join(kernel.split())
    return f'emu_launch({{"{name}", __FILE__, __LINE__}}, {config}, {kernel}, {breaks}'


out = launch.sub(rewrite, src)
if '<<<' in out:
    sys.exit(f'{sys.argv[1]}: a kernel launch launch.py cannot rewrite')
out = f'#line 1 "{sys.argv[1]}"\n' + out
if not os.path.exists(sys.argv[2]) or open(sys.argv[2]).read() != out:
    open(sys.argv[2], 'w').write(out)
