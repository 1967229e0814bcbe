/* The progress thread (GASNET_SHIM_PROGRESS_THREAD=1): rank 1 computes for three seconds
 * without calling GASNet while rank 0 makes AM round trips to it; with the thread they
 * complete before rank 1 is back (handlers run on the progress thread): the monotonic
 * clock is the node's, so rank 0 compares its end time with rank 1's. */
#include <unistd.h>
#include "check.h"
#include <gasnet_coll.h>
static volatile int replies;
static void ping(gex_Token_t t) { gex_AM_ReplyShort0(t, 201, 0); }
static void pong(gex_Token_t t) { (void)t; replies++; }
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm; gex_Segment_t s;
    gex_Client_Init(&c, &ep, &tm, "progress", &argc, &argv, 0);
    gex_AM_Entry_t tab[] = {{200, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
                            {201, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0}};
    gex_EP_RegisterHandlers(ep, tab, 2);
    gex_Segment_Attach(&s, tm, 1 << 16);
    gex_Rank_t me = gex_TM_QueryRank(tm);
    uint64_t done0 = 0, done1 = 0;
    BARRIER();
    if (me == 1) {
        gasnett_tick_t t0 = gasnett_ticks_now();
        volatile double x = 0;
        while (gasnett_ticks_to_ns(gasnett_ticks_now() - t0) < 3000000000ull) x += 1; /* no GASNet calls */
        done1 = gasnett_ticks_to_ns(gasnett_ticks_now());
    } else if (me == 0) {
        usleep(50 * 1000);
        gasnett_tick_t t0 = gasnett_ticks_now();
        for (int i = 0; i < 20; i++) {
            gex_AM_RequestShort0(tm, 1, 200, 0);
            GASNET_BLOCKUNTIL(replies == i + 1);
        }
        done0 = gasnett_ticks_to_ns(gasnett_ticks_now());
        printf("progress: 20 round trips in %lu ms\n", (unsigned long)((done0 - gasnett_ticks_to_ns(t0)) / 1000000));
    }
    gex_Event_Wait(gex_Coll_BroadcastNB(tm, 1, &done1, &done1, sizeof done1, 0));
    if (me == 0)
        CHECKF(done0 < done1, "the round trips ended %lu ms after the computing rank was back",
               (unsigned long)((done0 - done1) / 1000000));
    BARRIER();
    gasnet_exit(0);
    return 1;
}
