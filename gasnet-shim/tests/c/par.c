/* GASNET_PAR: 4 threads per rank at once, each with AM round trips to every rank
 * (handlers run on whichever thread polls), puts and gets of its own slice of the peer's
 * segment with NBI and an access region of its own, and fetch-adds on one counter;
 * every result checked. Built with skifch-par.mak. */
#include <pthread.h>
#include "check.h"
#include <gasnet_ratomic.h>
#ifndef GASNET_PAR
#error build with the -par fragment
#endif

enum { T = 4, ITERS = 100, H_PING = 200, H_PONG };
static gex_TM_t tm;
static gex_Rank_t me, n;
static void **segs;
static uint8_t *seg;
static gex_AD_t ad;
static gasnett_atomic_t pongs[T];
static gasnett_atomic_t served = gasnett_atomic_init(0);

static void ping(gex_Token_t t, gex_AM_Arg_t th, gex_AM_Arg_t i) {
    gasnett_atomic_increment(&served, 0);
    gex_AM_ReplyShort2(t, H_PONG, 0, th, i + 1);
}
static void pong(gex_Token_t t, gex_AM_Arg_t th, gex_AM_Arg_t i) {
    (void)t; (void)i;
    gasnett_atomic_increment(&pongs[th], 0);
}

static void *worker(void *arg) {
    int th = (int)(intptr_t)arg;
    gex_Rank_t peer = (me + 1) % n;
    uint8_t buf[1024], back[1024];
    size_t slice = 8192 + (size_t)th * 2048;
    for (int i = 0; i < ITERS; i++) {
        gex_Rank_t dst = (me + (gex_Rank_t)i) % n;
        CHECK(gex_AM_RequestShort2(tm, dst, H_PING, 0, th, i) == 0);
        GASNET_BLOCKUNTIL(gasnett_atomic_read(&pongs[th], 0) == (gasnett_atomic_val_t)(i + 1));
        for (int k = 0; k < 1024; k++) buf[k] = (uint8_t)(k + i + th + me);
        gex_RMA_PutNBI(tm, peer, (uint8_t *)segs[peer] + slice, buf, 1024, GEX_EVENT_DEFER, 0);
        gex_NBI_Wait(GEX_EC_PUT, 0);
        gex_NBI_BeginAccessRegion(0);
        gex_RMA_GetNBI(tm, back, peer, (uint8_t *)segs[peer] + slice, 512, 0);
        gex_RMA_GetNBI(tm, back + 512, peer, (uint8_t *)segs[peer] + slice + 512, 512, 0);
        gex_Event_Wait(gex_NBI_EndAccessRegion(0));
        CHECK(memcmp(buf, back, 1024) == 0);
        gex_AD_OpNBI_U64(ad, NULL, 0, segs[0], GEX_OP_ADD, 1, 0, 0);
    }
    gex_NBI_Wait(GEX_EC_ALL, 0);
    return 0;
}

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_Segment_t s;
    CHECK(gex_Client_Init(&c, &ep, &tm, "par", &argc, &argv, 0) == GASNET_OK);
    me = gex_TM_QueryRank(tm); n = gex_TM_QuerySize(tm);
    CHECK(gex_Segment_Attach(&s, tm, 1 << 16) == GASNET_OK);
    seg = gex_Segment_QueryAddr(s);
    gex_AM_Entry_t tab[] = {{H_PING, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 2, 0, 0},
                            {H_PONG, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 2, 0, 0}};
    gex_EP_RegisterHandlers(ep, tab, 2);
    segs = malloc(n * sizeof *segs);
    for (gex_Rank_t r = 0; r < n; r++) gex_EP_QueryBoundSegmentNB(tm, r, &segs[r], NULL, NULL, 0);
    gex_AD_Create(&ad, tm, GEX_DT_U64, GEX_OP_ADD | GEX_OP_GET, 0);
    BARRIER();
    pthread_t th[T];
    for (int i = 0; i < T; i++) pthread_create(&th[i], 0, worker, (void *)(intptr_t)i);
    for (int i = 0; i < T; i++) pthread_join(th[i], 0);
    BARRIER();
    CHECK(gasnett_atomic_read(&served, 0) == T * ITERS);
    if (me == 0) {
        uint64_t total = 0;
        gex_AD_OpBlocking_U64(ad, &total, 0, segs[0], GEX_OP_GET, 0, 0, 0);
        CHECKF(total == (uint64_t)T * ITERS * n, "total %lu", (unsigned long)total);
        printf("par: ok\n");
    }
    BARRIER();
    gasnet_exit(0);
    return 1;
}
