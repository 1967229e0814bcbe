# trace-windows.py: per-window phases from gbt TRACE=1 (/tmp/gbt.0, /tmp/gbt.1: TSC stamps of both ranks)
import sys, statistics as st
def load(f):
    rows=[]; ghz=None
    for l in open(f):
        if l.startswith('#'):
            p=l.split(); ghz=float(p[4]); rate=float(p[6]); continue
        rows.append([int(x) for x in l.split()])
    return ghz, rate, rows
g0,rate,s=load('/tmp/gbt.0'); g1,_,r=load('/tmp/gbt.1')
ns=lambda t: t/g0
skip=100
send=[];lag=[];ack=[];start=[];rfirst=[];rspan=[];win=[]
for w in range(skip, len(s)-1):
    _,a,b,c,_,_=s[w]; _,_,_,_,r0,r1=r[w]
    a2=s[w+1][1]
    send.append(ns(b-a)); rspan.append(ns(r1-r0)); rfirst.append(ns(r0-a)); lag.append(ns(r1-b)); ack.append(ns(c-r1)); start.append(ns(a2-c)); win.append(ns(a2-a))
for name,v in [('window',win),('sender 64 sends',send),('first msg seen by target after send start',rfirst),('target first..64th',rspan),('target 64th after sender done',lag),('ack seen by sender after target 64th',ack),('next window start after ack',start)]:
    v=sorted(v); print(f"{name:45s} median {st.median(v):8.1f} ns  p10 {v[len(v)//10]:8.1f}  p90 {v[9*len(v)//10]:8.1f}")
print("rate", rate, "ghz", g0, g1)
