# perinstr.py CALLGRIND_OUT FN: self Ir per instruction address of the functions whose
# name contains FN, from a callgrind file written with --dump-instr=yes (hotpath.sh)
import sys, re, collections
f, want = sys.argv[1], sys.argv[2]
names = {}; cur_fn = None; addr = 0; line = 0; skip_next = False
cost = collections.Counter()
def sub(tok, prev):
    if tok == '*': return prev
    if tok[0] in '+-': return prev + int(tok, 0 if tok[1:].startswith('0x') else 10) if not tok[1:].startswith('0x') else prev + (int(tok[1:],16) * (1 if tok[0]=='+' else -1))
    return int(tok, 16) if tok.startswith('0x') else int(tok)
for l in open(f):
    l = l.rstrip('\n')
    if l.startswith('fn='):
        m = re.match(r'fn=\((\d+)\)(?: (.*))?', l)
        if m:
            if m.group(2): names[m.group(1)] = m.group(2)
            cur_fn = names.get(m.group(1))
        else: cur_fn = l[3:]
        continue
    if l.startswith('cfn='):
        m = re.match(r'cfn=\((\d+)\)(?: (.*))?', l)
        if m and m.group(2): names[m.group(1)] = m.group(2)
        continue
    if l.startswith('calls='): skip_next = True; continue
    if not l or not (l[0].isdigit() or l[0] in '+-*' or l.startswith('0x')): continue
    toks = l.split()
    addr = sub(toks[0], addr)
    if len(toks) > 2: line = sub(toks[1], line)
    if skip_next: skip_next = False; continue
    if cur_fn and want in cur_fn and len(toks) >= 3:
        cost[addr] += int(toks[2])
for a in sorted(cost): print(f"{a:#x} {cost[a]}")
