# summary.py FILE: per test, each variant's median [min-max] over the rounds of an ab.sh / ab-oversubscribed.sh file.
import collections,statistics,sys
d=collections.defaultdict(list); vs=[]
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<4: continue
    if f[2].startswith('amlat'):
        k,v,x=f[2],f[1],f[4]
    else:
        v,k,x=f[3].split(','); k=f[1]+'_'+k
    if v not in vs: vs.append(v)
    d[(k,v)].append(float(x))
for k in sorted(set(k[0] for k in d)):
    print(f"{k:20s}", "  ".join(f"{v} {statistics.median(d[(k,v)]):.4f} [{min(d[(k,v)]):.3f}-{max(d[(k,v)]):.3f}]" for v in vs if d.get((k,v))))
