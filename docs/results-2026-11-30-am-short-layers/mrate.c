/* AM Medium 8 B rate: windows of 64 requests then one Short ack (gasnet_bench's msgrate);
 * prints the median and best of P passes of W windows; rank 1 serves from the barrier's wait
 * (as gasnet_bench's target serves from gex_Event_Wait). Usage: skifrun -n 2 ./mrate [W] [P] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gasnetex.h>
#include <gasnet_tools.h>
enum { H_RATE = 200, H_ACK };
enum { WINDOW = 64 };
static volatile long got, acks, bad;
static void rate(gex_Token_t t, void *buf, size_t n) {
    if (n != 8 || ((unsigned char *)buf)[0] != 1) bad = 1;
    if (++got % WINDOW == 0) gex_AM_ReplyShort0(t, H_ACK, 0);
}
static void ack(gex_Token_t t) { (void)t; acks++; }
static double now(void) { return (double)gasnett_ticks_to_ns(gasnett_ticks_now()) * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm;
    gex_Client_Init(&c, &ep, &tm, "mrate", &argc, &argv, 0);
    long windows = argc > 1 ? atol(argv[1]) : 20000;
    int passes = argc > 2 ? atoi(argv[2]) : 7;
    gex_Rank_t me = gex_TM_QueryRank(tm);
    cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(me, &cs); sched_setaffinity(0, sizeof cs, &cs);
    gex_AM_Entry_t t[] = {
        {H_RATE, (gex_AM_Fn_t)rate, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_ACK, (gex_AM_Fn_t)ack, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
    };
    gex_EP_RegisterHandlers(ep, t, 2);
    unsigned char buf[64]; memset(buf, 1, sizeof buf);
    double v[64];
    for (int p = 0; p < passes && p < 64; p++) {
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
        if (me == 0) {
            long base = acks;
            double t0 = now();
            for (long w = 0; w < windows; w++) {
                for (int i = 0; i < WINDOW; i++) gex_AM_RequestMedium0(tm, 1, H_RATE, buf, 8, GEX_EVENT_NOW, 0);
                GASNET_BLOCKUNTIL(acks == base + w + 1);
            }
            v[p] = windows * WINDOW / (now() - t0);
        }
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS); /* rank 1 serves in the barrier's wait */
    }
    if (me == 0) {
        qsort(v, passes, sizeof v[0], cmp);
        printf("median %.1f M best %.1f M%s\n", v[passes / 2] / 1e6, v[passes - 1] / 1e6, bad ? " BAD" : "");
    }
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
}
