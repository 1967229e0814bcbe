/* Client-created segments: gex_Segment_Create (library memory, or the client's own
 * page-aligned memory with argv[1] = "client"), gex_EP_BindSegment,
 * gex_EP_PublishBoundSegment, then puts, gets and Long AMs into it (more endpoints:
 * multiep.c). */
#include <stdlib.h>
#include "check.h"
static volatile int got;
static uint8_t *base;
static void lng(gex_Token_t t, void *buf, size_t n) {
    (void)t;
    CHECK(buf == base + 256 && n == 3000 && ((uint8_t *)buf)[2999] == 9);
    got = 1;
}
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm; gex_Segment_t seg;
    CHECK(gex_Client_Init(&c, &ep, &tm, "segcreate", &argc, &argv, 0) == GASNET_OK);
    gex_Rank_t me = gex_TM_QueryRank(tm), n = gex_TM_QuerySize(tm), peer = (me + 1) % n;
    void *mine = NULL;
    size_t len = 1 << 16;
    if (argc > 1 && !strcmp(argv[1], "client")) {
        CHECK(posix_memalign(&mine, 4096, len) == 0);
        memset(mine, 0, len);
    }
    CHECK(gex_Segment_Create(&seg, c, mine, len, GEX_MK_HOST, 0) == GASNET_OK);
    base = gex_Segment_QueryAddr(seg);
    CHECK(base && (!mine || base == mine) && gex_Segment_QuerySize(seg) >= len);
    gex_AM_Entry_t t[] = {{200, (gex_AM_Fn_t)lng, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 0, 0, 0}};
    gex_EP_RegisterHandlers(ep, t, 1);
    gex_EP_BindSegment(ep, seg, 0);
    CHECK(gex_EP_PublishBoundSegment(tm, &ep, 1, 0) == GASNET_OK);
    void *pseg;
    gex_EP_QueryBoundSegmentNB(tm, peer, &pseg, NULL, NULL, 0);
    uint64_t v = 1000 + me, w = 0;
    gex_RMA_PutBlocking(tm, peer, (uint8_t *)pseg + 64, &v, 8, 0);
    BARRIER();
    memcpy(&w, base + 64, 8);
    CHECK(w == 1000 + (me + n - 1) % n);
    CHECK(gex_RMA_GetBlockingVal(tm, peer, (uint8_t *)pseg + 64, 8, 0) == 1000 + me);
    uint8_t b[3000];
    memset(b, 9, sizeof b);
    gex_AM_RequestLong0(tm, peer, 200, b, sizeof b, (uint8_t *)pseg + 256, GEX_EVENT_NOW, 0);
    GASNET_BLOCKUNTIL(got);
    BARRIER();
    if (me == 0) printf("segcreate: ok\n");
    gasnet_exit(0);
    return 1;
}
