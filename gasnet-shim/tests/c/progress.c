/* The progress thread (GASNET_SHIM_PROGRESS_THREAD=1): rank 1 computes without calling
 * GASNet while rank 0 makes 20 AM round trips to it; with the thread, the handlers run on
 * it while rank 1's main thread is still computing. Rank 1's loop ends when its handler has
 * served all 20 (a counter the handler writes: no GASNet call) or after 60 s without: a
 * rank without progress fails after the minute, and a slow, loaded machine only makes the
 * loop longer, never the verdict wrong. */
#include <unistd.h>
#include "check.h"
#include <gasnet_coll.h>
enum { N = 20 };
static volatile int replies;
static int served; /* written by the handler (the progress thread), read by the main thread */
static void ping(gex_Token_t t) {
    __atomic_fetch_add(&served, 1, __ATOMIC_RELEASE);
    gex_AM_ReplyShort0(t, 201, 0);
}
static void pong(gex_Token_t t) { (void)t; replies++; }
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm; gex_Segment_t s;
    gex_Client_Init(&c, &ep, &tm, "progress", &argc, &argv, 0);
    gex_AM_Entry_t tab[] = {{200, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
                            {201, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0}};
    gex_EP_RegisterHandlers(ep, tab, 2);
    gex_Segment_Attach(&s, tm, 1 << 16);
    gex_Rank_t me = gex_TM_QueryRank(tm);
    int64_t seen = -1;
    BARRIER();
    if (me == 1) {
        gasnett_tick_t t0 = gasnett_ticks_now();
        volatile double x = 0;
        while (__atomic_load_n(&served, __ATOMIC_ACQUIRE) < N &&
               gasnett_ticks_to_ns(gasnett_ticks_now() - t0) < 60000000000ull)
            x += 1; /* no GASNet calls */
        seen = __atomic_load_n(&served, __ATOMIC_ACQUIRE);
        printf("progress: %d round trips served while computing, in %lu ms\n", (int)seen,
               (unsigned long)(gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1000000));
    } else if (me == 0) {
        for (int i = 0; i < N; i++) {
            gex_AM_RequestShort0(tm, 1, 200, 0);
            GASNET_BLOCKUNTIL(replies == i + 1);
        }
    }
    gex_Event_Wait(gex_Coll_BroadcastNB(tm, 1, &seen, &seen, sizeof seen, 0));
    if (me == 0)
        CHECKF(seen == N, "rank 1 served %d of %d round trips while computing (60 s)", (int)seen, N);
    BARRIER();
    gasnet_exit(0);
    return 1;
}
