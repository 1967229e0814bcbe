/* AM Short ping-pong latency with the target waiting in a BLOCKUNTIL (mode b), a barrier (mode w)
 * or the event of a broadcast rank 0 enters after its round trips (mode e: as gasnet_bench). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gasnetex.h>
#include <gasnet_tools.h>
#include <gasnet_coll.h>
enum { H_PING = 200, H_PONG, H_STOP };
static volatile long pongs, stop;
static void ping(gex_Token_t t) { gex_AM_ReplyShort0(t, H_PONG, 0); }
static void pong(gex_Token_t t) { (void)t; pongs++; }
static void stp(gex_Token_t t) { (void)t; stop++; }
static double now(void) { return (double)gasnett_ticks_to_ns(gasnett_ticks_now()) * 1e-9; }
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm;
    gex_Client_Init(&c, &ep, &tm, "amlat", &argc, &argv, 0);
    char mode = argc > 1 ? argv[1][0] : 'b';
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    int passes = argc > 3 ? atoi(argv[3]) : 5;
    gex_Rank_t me = gex_TM_QueryRank(tm);
    cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(me, &cs); sched_setaffinity(0, sizeof cs, &cs);
    gex_AM_Entry_t t[] = {
        {H_PING, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_PONG, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_STOP, (gex_AM_Fn_t)stp, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
    };
    gex_EP_RegisterHandlers(ep, t, 3);
    double bestt = 1e9;
    for (int p = 0; p < passes; p++) {
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
        if (me == 0) {
            double t0 = now();
            long base = pongs;
            for (long i = 0; i < n; i++) {
                gex_AM_RequestShort0(tm, 1, H_PING, 0);
                GASNET_BLOCKUNTIL(pongs == base + i + 1);
            }
            double dt = now() - t0;
            if (dt < bestt) bestt = dt;
            gex_AM_RequestShort0(tm, 1, H_STOP, 0);
        }
        if (mode == 'e') {
            double v = 0;
            gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &v, &v, sizeof v, 0));
        } else if (mode == 'b' && me != 0) {
            GASNET_BLOCKUNTIL(stop == p + 1);
        }
    }
    if (me == 0) printf("%c: half-rtt %.4f us\n", mode, bestt / n / 2 * 1e6);
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
}
