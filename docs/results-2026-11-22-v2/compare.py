import csv,sys,statistics
def load(f):
    d={}
    for r in csv.reader(open(f)):
        if len(r)<5 or r[0]=='impl': continue
        try: d[(r[0],r[1],int(r[2]))]=float(r[3])
        except: pass
    return d
rounds=sys.argv[1:] if len(sys.argv)>1 else ['1','2']
res={}
for r in rounds:
    sk=load(f'sk{r}.csv'); pe=load(f'peers{r}.csv')
    ours={(t,s):v for (i,t,s),v in sk.items()}
    for (t,s),v in ours.items():
        raw=pe.get(('rawring',t,s))
        mpis=[pe.get((m,t,s)) for m in ('openmpi','openmpi-ucx','mpich')]
        mpis=[x for x in mpis if x]
        if t=='msgrate':
            best=max(mpis) if mpis else None
            res.setdefault((t,s),[]).append((v,raw,v/raw if raw else None,best,v/best if best else None))
        elif t=='latency':
            best=min(mpis) if mpis else None
            res.setdefault((t,s),[]).append((v,raw,v/raw if raw else None,best,v/best if best else None))
for (t,s) in sorted(res):
    rows=res[(t,s)]
    rr=[x[2] for x in rows if x[2]]; rm=[x[4] for x in rows if x[4]]
    print(f"{t:8} {s:6} ours {[round(x[0]/1e6,1) if t=='msgrate' else x[0] for x in rows]} raw {[round(x[1]/1e6,1) if t=='msgrate' else x[1] for x in rows]} ours/raw {statistics.median(rr):.2f} ours/bestMPI {statistics.median(rm):.2f}")
