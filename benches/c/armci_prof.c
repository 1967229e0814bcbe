/*
 * armci_prof.c -- counts a program's ARMCI traffic through the profiling interface
 * (armci-shim/README.md, "Global Arrays ... over fpga-model"): a shared library that
 * defines the data-moving ARMCI_X calls (and the barriers and reductions), each counting
 * calls, contiguous pieces, bytes and time before calling PARMCI_X. Loaded with
 * LD_PRELOAD into an unmodified program (Global Arrays' tests); each rank prints its
 * totals on stderr at ARMCI_Finalize, or when ended by SIGTERM (a run cut by a time
 * limit still reports).
 *
 *   cc -O2 -shared -fPIC -I armci-shim/include benches/c/armci_prof.c -o libarmciprof.so \
 *      -L target/release -larmci
 *   ARMCI_SHIM_RMA=off target/release/skifrun -n 4 -x LD_PRELOAD=$PWD/libarmciprof.so -- ./testmult.x
 *
 * Output lines: "[prof rank R] CALL  N calls  P pieces  B bytes  T s" (pieces: the
 * contiguous blocks of a strided or vector call; Wait, Fence and barriers count calls).
 */
#define _GNU_SOURCE
#include <armci.h>
#include <message.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
enum { PUTS, GETS, ACCS, PUTV, GETV, ACCV, RMW, LOCK, UNLOCK, FENCE, ALLFENCE, BARRIER,
       MSGBAR, GOP, BCAST, WAIT, NK };
static const char *names[NK] = {"PutS", "GetS", "AccS", "PutV", "GetV", "AccV", "Rmw",
                                "Lock", "Unlock", "Fence", "AllFence", "Barrier",
                                "msg_barrier", "gop", "bcast", "Wait"};
static long cnt[NK], segs[NK];
static double bytes[NK], tim[NK], t0;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The totals, in one write (ranks' lines do not interleave). */
static void dump(void)
{
    char b[4096];
    int o = snprintf(b, sizeof b, "[prof rank %d] %.1f s total\n", armci_msg_me(), now() - t0);
    for (int k = 0; k < NK; k++)
        if (cnt[k] && o < (int)sizeof b)
            o += snprintf(b + o, sizeof b - o,
                          "[prof rank %d] %-12s %8ld calls %10ld pieces %12.0f bytes %8.2f s\n",
                          armci_msg_me(), names[k], cnt[k], segs[k], bytes[k], tim[k]);
    if (write(2, b, o < (int)sizeof b ? (size_t)o : sizeof b - 1) < 0) return;
}

/* (best effort from a signal handler: a diagnostic tool, the program is ending anyway) */
static void onterm(int s)
{
    dump();
    signal(s, SIG_DFL);
    raise(s);
}

__attribute__((constructor)) static void init(void)
{
    t0 = now();
    signal(SIGTERM, onterm);
}

#define T0 double _t = now()
#define T1(k, b, s)         \
    do {                    \
        cnt[k]++;           \
        bytes[k] += (b);    \
        segs[k] += (s);     \
        tim[k] += now() - _t; \
    } while (0)

/* bytes and contiguous pieces of a strided call */
static long sbytes(int *count, int l)
{
    long b = 1;
    for (int i = 0; i <= l; i++) b *= count[i];
    return b;
}
static long spieces(int *count, int l)
{
    long b = 1;
    for (int i = 1; i <= l; i++) b *= count[i];
    return b;
}

int ARMCI_PutS(void*s,int*ss,void*d,int*ds,int*c,int l,int p){T0;int r=PARMCI_PutS(s,ss,d,ds,c,l,p);T1(PUTS,sbytes(c,l),spieces(c,l));return r;}
int ARMCI_NbPutS(void*s,int*ss,void*d,int*ds,int*c,int l,int p,armci_hdl_t*h){T0;int r=PARMCI_NbPutS(s,ss,d,ds,c,l,p,h);T1(PUTS,sbytes(c,l),spieces(c,l));return r;}
int ARMCI_GetS(void*s,int*ss,void*d,int*ds,int*c,int l,int p){T0;int r=PARMCI_GetS(s,ss,d,ds,c,l,p);T1(GETS,sbytes(c,l),spieces(c,l));return r;}
int ARMCI_NbGetS(void*s,int*ss,void*d,int*ds,int*c,int l,int p,armci_hdl_t*h){T0;int r=PARMCI_NbGetS(s,ss,d,ds,c,l,p,h);T1(GETS,sbytes(c,l),spieces(c,l));return r;}
int ARMCI_AccS(int o,void*sc,void*s,int*ss,void*d,int*ds,int*c,int l,int p){T0;int r=PARMCI_AccS(o,sc,s,ss,d,ds,c,l,p);T1(ACCS,sbytes(c,l),spieces(c,l));return r;}
int ARMCI_NbAccS(int o,void*sc,void*s,int*ss,void*d,int*ds,int*c,int l,int p,armci_hdl_t*h){T0;int r=PARMCI_NbAccS(o,sc,s,ss,d,ds,c,l,p,h);T1(ACCS,sbytes(c,l),spieces(c,l));return r;}
static long vb(armci_giov_t*v,int n){long b=0;for(int i=0;i<n;i++)b+=(long)v[i].ptr_array_len*v[i].bytes;return b;}
static long vp(armci_giov_t*v,int n){long b=0;for(int i=0;i<n;i++)b+=v[i].ptr_array_len;return b;}
int ARMCI_PutV(armci_giov_t*v,int n,int p){T0;int r=PARMCI_PutV(v,n,p);T1(PUTV,vb(v,n),vp(v,n));return r;}
int ARMCI_GetV(armci_giov_t*v,int n,int p){T0;int r=PARMCI_GetV(v,n,p);T1(GETV,vb(v,n),vp(v,n));return r;}
int ARMCI_AccV(int o,void*sc,armci_giov_t*v,int n,int p){T0;int r=PARMCI_AccV(o,sc,v,n,p);T1(ACCV,vb(v,n),vp(v,n));return r;}
int ARMCI_Rmw(int o,void*a,void*b,int v,int p){T0;int r=PARMCI_Rmw(o,a,b,v,p);T1(RMW,0,1);return r;}
void ARMCI_Lock(int m,int p){T0;PARMCI_Lock(m,p);T1(LOCK,0,1);}
void ARMCI_Unlock(int m,int p){T0;PARMCI_Unlock(m,p);T1(UNLOCK,0,1);}
void ARMCI_Fence(int p){T0;PARMCI_Fence(p);T1(FENCE,0,1);}
void ARMCI_AllFence(void){T0;PARMCI_AllFence();T1(ALLFENCE,0,1);}
void ARMCI_Barrier(void){T0;PARMCI_Barrier();T1(BARRIER,0,1);}
void armci_msg_barrier(void){T0;parmci_msg_barrier();T1(MSGBAR,0,1);}
void armci_msg_group_barrier(ARMCI_Group*g){T0;parmci_msg_group_barrier(g);T1(MSGBAR,0,1);}
void armci_msg_dgop(double*x,int n,char*op){T0;parmci_msg_dgop(x,n,op);T1(GOP,8.0*n,1);}
void armci_msg_igop(int*x,int n,char*op){T0;parmci_msg_igop(x,n,op);T1(GOP,4.0*n,1);}
void armci_msg_lgop(long*x,int n,char*op){T0;parmci_msg_lgop(x,n,op);T1(GOP,8.0*n,1);}
void armci_msg_gop_scope(int s,void*x,int n,char*op,int t){T0;parmci_msg_gop_scope(s,x,n,op,t);T1(GOP,n,1);}
void armci_msg_group_gop_scope(int s,void*x,int n,char*op,int t,ARMCI_Group*g){T0;parmci_msg_group_gop_scope(s,x,n,op,t,g);T1(GOP,n,1);}
void armci_msg_bcast(void*b,int l,int r){T0;parmci_msg_bcast(b,l,r);T1(BCAST,l,1);}
void armci_msg_group_bcast_scope(int s,void*b,int l,int r,ARMCI_Group*g){T0;parmci_msg_group_bcast_scope(s,b,l,r,g);T1(BCAST,l,1);}
int ARMCI_Wait(armci_hdl_t*h){T0;int r=PARMCI_Wait(h);T1(WAIT,0,1);return r;}
int ARMCI_Finalize(void){dump();return PARMCI_Finalize();}
