/* A rank dies (exits without gasnet_exit) in the middle of AM ping-pongs (or of puts
 * and gets: argv[1] = "rma"); the others must
 * end with an error naming their call, never hang. */
#include <unistd.h>
#include "check.h"
static gasnett_atomic_t got = gasnett_atomic_init(0);
static void ping(gex_Token_t t) { gex_AM_ReplyShort0(t, 201, 0); }
static void pong(gex_Token_t t) { (void)t; gasnett_atomic_increment(&got, 0); }
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm; gex_Segment_t seg;
    gex_Client_Init(&c, &ep, &tm, "dead", &argc, &argv, 0);
    gex_Segment_Attach(&seg, tm, 1 << 16);
    gex_AM_Entry_t t[] = {{200, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
                          {201, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0}};
    gex_EP_RegisterHandlers(ep, t, 2);
    gex_Rank_t me = gex_TM_QueryRank(tm), n = gex_TM_QuerySize(tm);
    BARRIER();
    if (me == n - 1) { usleep(100 * 1000); _exit(0); }
    if (argc > 1 && !strcmp(argv[1], "rma")) {
        void *rseg; char b[4096];
        gex_EP_QueryBoundSegmentNB(tm, n - 1, &rseg, NULL, NULL, 0);
        for (long i = 0; i < 100 * 1000 * 1000; i++) {
            gex_RMA_PutBlocking(tm, n - 1, rseg, b, sizeof b, 0);
            gex_RMA_GetBlocking(tm, b, n - 1, rseg, sizeof b, 0);
        }
        printf("rank %u: the loop ended without an error\n", me);
        return 0;
    }
    for (long i = 0; i < 100 * 1000 * 1000; i++) {
        gex_AM_RequestShort0(tm, n - 1, 200, 0);
        GASNET_BLOCKUNTIL(gasnett_atomic_read(&got, 0) == (gasnett_atomic_val_t)(i + 1));
    }
    printf("rank %u: the loop ended without an error\n", me);
    return 0;
}
