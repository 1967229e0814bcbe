#!/bin/bash
# hotpath.sh NP_LOOP OUT [FN] [MODE]: the instructions FN (default gasnetc_am_request_fast)
# executes per call, one by one with their source lines, from callgrind --dump-instr=yes
# on NP_LOOP (benches/c/gasnet_np_loop.c as scripts/gasnet-callgrind.sh builds it: run that
# with CG_OUT=DIR, then NP_LOOP=DIR/np_loop) sending 8000 8-byte Mediums (MODE copy).
# Prints the count and the stores (pushes and memory destinations); OUT/hot.txt lists them.
set -eu
np=$1; out=$2; fn=${3:-gasnetc_am_request_fast}; mode=${4:-copy}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
rel=${CARGO_TARGET_DIR:-$root/target}/release
mkdir -p "$out"
SKIFCH_WAIT=spin "$rel/skifrun" -n 2 --timeout 600 -- valgrind --tool=callgrind --dump-instr=yes \
    --callgrind-out-file="$out/med.%q{SKIFCH_RANK}" "$np" 8000 8 "$mode" >"$out/log" 2>&1
python3 "$here/perinstr.py" "$out/med.0" "$fn" >"$out/pi.txt"
lib=$rel/libgasnet.so
start=$(nm -D --defined-only "$lib" | awk -v f="$fn" '$3 == f { print $1 }')
objdump -d -l --no-show-raw-insn -M intel "$lib" --start-address="0x$start" \
    --stop-address="$(printf '0x%x' $((0x$start + 0x2000)))" >"$out/dis.txt"
python3 - "$out" <<'PY'
import re, sys
o = sys.argv[1]
hot = {int(l.split()[0], 16): int(l.split()[1]) for l in open(o + '/pi.txt')}
src, out = None, []
for l in open(o + '/dis.txt'):
    l = l.rstrip()
    m = re.match(r'^(/\S+):(\d+)', l)
    if m:
        src = '/'.join(m.group(1).split('/')[-2:]) + ':' + m.group(2)
        continue
    m = re.match(r'^\s+([0-9a-f]+):\s+(.*)', l)
    if m and int(m.group(1), 16) in hot:
        out.append(f"{m.group(1)} {hot[int(m.group(1), 16)] / 8000:4.1f} {m.group(2)[:58]:58s} {src}")
open(o + '/hot.txt', 'w').write('\n'.join(out) + '\n')
st = sum(1 for x in out if re.search(r'(mov|movaps|movups)\s+(BYTE|WORD|DWORD|QWORD|XMMWORD) PTR \[', x) or ' push ' in x)
print(f"{len(out)} instructions executed in the function ({sum(hot.values()) / 8000:.1f} a call counted), stores ~{st}")
PY
