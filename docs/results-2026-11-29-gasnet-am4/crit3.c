/* crit1.c: AM Short RT median in TSC ticks, one stamp per RT; the target waits in a
 * gasnet_AMPoll loop ("poll"), in gex_Event_Wait of a broadcast ("event", as
 * benches/c/gasnet_bench.c), or in gasnet_barrier ("barrier"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <x86intrin.h>
#include <gasnetex.h>
#include <gasnet_coll.h>
enum { H_PING = 200, H_PONG, H_STOP };
#define N 20000
static gex_TM_t tm; static int me;
static volatile long pongs, stop;
static uint64_t T0[N + 1];
static int wping, wpong; static volatile unsigned long sink;
static void spin(int w) { unsigned long x = sink; for (int k = 0; k < w; k++) x = x * 3 + k; sink = x; }
static void ping(gex_Token_t t) { spin(wping); gex_AM_ReplyShort0(t, H_PONG, 0); }
static void pong(gex_Token_t t) { (void)t; spin(wpong); pongs++; }
static void hstop(gex_Token_t t) { (void)t; stop = 1; }
static int cmp(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    gex_Client_t cl; gex_EP_t ep; gex_Segment_t seg;
    gex_Client_Init(&cl, &ep, &tm, "crit1", &argc, &argv, 0);
    me = gex_TM_QueryRank(tm); wping = getenv("WPING") ? atoi(getenv("WPING")) : 0; wpong = getenv("WPONG") ? atoi(getenv("WPONG")) : 0;
    gex_AM_Entry_t t[] = {
        {H_PING, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_PONG, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_STOP, (gex_AM_Fn_t)hstop, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
    };
    gex_EP_RegisterHandlers(ep, t, 3);
    gex_Segment_Attach(&seg, tm, 1 << 20);
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const char *tmode = argc > 2 ? argv[2] : "barrier";
    for (int r = 0; r < rounds; r++) {
        pongs = 0;
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
        if (me == 0) {
            for (long i = 0; i < N; i++) {
                T0[i] = __rdtsc();
                gex_AM_RequestShort0(tm, 1, H_PING, 0);
                GASNET_BLOCKUNTIL(pongs == i + 1);
            }
            T0[N] = __rdtsc();
            if (!strcmp(tmode, "poll")) gex_AM_RequestShort0(tm, 1, H_STOP, 0);
            static int64_t d[N]; int k = 0;
            for (long i = 100; i < N; i++) d[k++] = T0[i + 1] - T0[i];
            qsort(d, k, sizeof d[0], cmp);
            printf("crit1-%s RT %ld\n", tmode, d[k / 2]);
        } else if (!strcmp(tmode, "poll")) { while (!stop) gasnet_AMPoll(); stop = 0; }
        if (!strcmp(tmode, "event")) { /* the target waits in a broadcast's event, as benches/c/gasnet_bench.c */
            double v = 1; gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &v, &v, sizeof v, 0));
        }
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    }
    gasnet_exit(0);
}
