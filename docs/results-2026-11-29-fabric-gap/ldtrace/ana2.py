# ana2.py TSC_GHZ FILE...: per-hop phases of a ping-pong from ldtrace.so's stamps of its
# two processes (the two files with the most stamps: a launcher or `timeout` process under
# the same preload leaves an empty one)
import os, sys, bisect, statistics as st
ghz=float(sys.argv[1])
def load(f):
    ev={1:[],2:[],3:[],4:[]}
    for l in open(f):
        if l.startswith('#'): continue
        t,k=l.split(); ev[int(k)].append(int(t))
    return ev
files=sorted(sys.argv[2:], key=os.path.getsize, reverse=True)[:2]
A=load(files[0]); B=load(files[1])
def med(v):
    v=sorted(v); k=len(v)//10; v=v[k:len(v)-k]; return st.median(v) if v else float('nan')
for name,(P,Q) in (("A->B",(A,B)),("B->A",(B,A))):
    sc=[];dl=[];er=[];tu=[];rs=[]
    for i,t in enumerate(P[1]):
        j=bisect.bisect_left(P[4],t)
        if j>=len(P[4]): continue
        se=P[4][j]
        e=bisect.bisect_right(Q[3],t)        # the peer's first epoll>0 exit after the send entry
        if e>=len(Q[3]): continue
        qe=Q[3][e]
        r=bisect.bisect_right(Q[2],qe)
        if r>=len(Q[2]): continue
        qr=Q[2][r]
        s2=bisect.bisect_right(Q[1],qr)
        if s2>=len(Q[1]): continue
        sc.append((se-t)/ghz); dl.append((qe-se)/ghz); er.append((qr-qe)/ghz); tu.append((Q[1][s2]-qr)/ghz)
    print(f"{name}: send syscall {med(sc):5.0f} | send exit -> peer epoll>0 exit {med(dl):5.0f} | peer epoll exit -> recv exit {med(er):5.0f} | peer recv exit -> its send {med(tu):5.0f} ns  (n={len(sc)})")
