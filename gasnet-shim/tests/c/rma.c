/* One-sided put/get on 2-4 ranks, every byte checked: Blocking, NB (with events: Test,
 * Wait, TestAll/Some, WaitAll/Some) and NBI (gex_NBI_Wait/Test, access regions) for sizes
 * from 1 byte to 1 MiB at unaligned offsets, the Val forms for 1-8 bytes, puts and gets
 * to and from this rank itself, gex_Coll_BarrierNB, and the GASNet-1 names (gasnet.h). */
#include "check.h"
#include <gasnet.h>

static gex_Rank_t me, n;
static uint8_t *seg;
static void **segs;
#define SEGSZ (4u << 20)

static uint8_t pat(size_t i, int who, int salt) { return (uint8_t)(i * 13 + who * 7 + salt); }

static void *at(gex_Rank_t r, size_t off) { return (uint8_t *)segs[r] + off; }

/* Every rank fills [off, off+len) of its segment with pat(., me, salt), barrier. */
static void fill(size_t off, size_t len, int salt) {
    for (size_t i = 0; i < len; i++) seg[off + i] = pat(i, (int)me, salt);
    BARRIER();
}
static void expect(const uint8_t *p, size_t len, int who, int salt, const char *what) {
    for (size_t i = 0; i < len; i++)
        CHECKF(p[i] == pat(i, who, salt), "%s: byte %zu of %zu", what, i, len);
}

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm; gex_Segment_t s;
    CHECK(gex_Client_Init(&c, &ep, &tm, "rma", &argc, &argv, 0) == GASNET_OK);
    me = gex_TM_QueryRank(tm); n = gex_TM_QuerySize(tm);
    CHECK(gex_Segment_Attach(&s, tm, SEGSZ) == GASNET_OK);
    seg = gex_Segment_QueryAddr(s);
    segs = malloc(n * sizeof *segs);
    for (gex_Rank_t r = 0; r < n; r++) gex_EP_QueryBoundSegmentNB(tm, r, &segs[r], NULL, NULL, 0);
    gex_Rank_t peer = (me + 1) % n, prev = (me + n - 1) % n;
    uint8_t *buf = malloc(SEGSZ), *buf2 = malloc(SEGSZ);
    BARRIER();

    size_t sizes[] = {1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4096, 4097, 65536, 100000, 1 << 20};
    int ns = sizeof sizes / sizeof sizes[0];
    for (int k = 0; k < ns; k++) {
        size_t len = sizes[k], off = 3 + (size_t)k; /* unaligned */
        /* Blocking put into the peer, then each checks what its predecessor wrote. */
        for (size_t i = 0; i < len; i++) buf[i] = pat(i, (int)me, k);
        CHECK(gex_RMA_PutBlocking(tm, peer, at(peer, off), buf, len, 0) == 0);
        BARRIER();
        expect(seg + off, len, (int)prev, k, "PutBlocking");
        BARRIER();
        /* NB put with an event; local completion at return. */
        gex_Event_t lc = GEX_EVENT_NO_OP;
        for (size_t i = 0; i < len; i++) buf[i] = pat(i, (int)me, k + 50);
        gex_Event_t e = gex_RMA_PutNB(tm, peer, at(peer, off + 1), buf, len, &lc, 0);
        CHECK(lc == GEX_EVENT_INVALID);
        memset(buf, 0, len); /* reusable now */
        while (gex_Event_Test(e) != GASNET_OK) gasnet_AMPoll();
        BARRIER();
        expect(seg + off + 1, len, (int)prev, k + 50, "PutNB");
        BARRIER();
        /* NBI puts in two halves, synced with gex_NBI_Wait. */
        for (size_t i = 0; i < len; i++) buf[i] = pat(i, (int)me, k + 100);
        gex_RMA_PutNBI(tm, peer, at(peer, off), buf, len / 2, GEX_EVENT_DEFER, 0);
        gex_RMA_PutNBI(tm, peer, at(peer, off + len / 2), buf + len / 2, len - len / 2, GEX_EVENT_DEFER, 0);
        gex_NBI_Wait(GEX_EC_PUT, 0);
        BARRIER();
        expect(seg + off, len, (int)prev, k + 100, "PutNBI");
        /* Gets: Blocking, NB (WaitAll over two halves), NBI (NBI_Test loop). */
        fill(off, len, k + 150);
        memset(buf, 0, len);
        CHECK(gex_RMA_GetBlocking(tm, buf, peer, at(peer, off), len, 0) == 0);
        expect(buf, len, (int)peer, k + 150, "GetBlocking");
        memset(buf, 0, len);
        gex_Event_t ev[3] = {gex_RMA_GetNB(tm, buf, peer, at(peer, off), len / 2, 0),
                             gex_RMA_GetNB(tm, buf + len / 2, peer, at(peer, off + len / 2), len - len / 2, 0),
                             GEX_EVENT_INVALID};
        gex_Event_WaitAll(ev, 3, 0);
        CHECK(ev[0] == GEX_EVENT_INVALID && ev[1] == GEX_EVENT_INVALID);
        expect(buf, len, (int)peer, k + 150, "GetNB");
        memset(buf2, 0, len);
        gex_RMA_GetNBI(tm, buf2, prev, at(prev, off), len, 0);
        while (gex_NBI_Test(GEX_EC_GET, 0) != GASNET_OK) gasnet_AMPoll();
        expect(buf2, len, (int)prev, k + 150, "GetNBI");
        /* From and to this rank itself. */
        memset(buf2, 0, len);
        gex_RMA_GetBlocking(tm, buf2, me, at(me, off), len, 0);
        expect(buf2, len, (int)me, k + 150, "self get");
        BARRIER();
    }

    /* Access region: several NBI puts and gets become one event. */
    fill(0, 4096, 7);
    memset(buf, 0, 4096);
    gex_NBI_BeginAccessRegion(0);
    for (int i = 0; i < 8; i++) gex_RMA_GetNBI(tm, buf + 512 * i, peer, at(peer, 512 * i), 512, 0);
    gex_Event_t reg = gex_NBI_EndAccessRegion(0);
    gex_Event_t some[1] = {reg};
    gex_Event_WaitSome(some, 1, 0);
    while (some[0] != GEX_EVENT_INVALID && gex_Event_TestSome(some, 1, 0) != GASNET_OK) gasnet_AMPoll();
    expect(buf, 4096, (int)peer, 7, "access region");
    BARRIER();

    /* Val forms, 1-8 bytes. */
    for (size_t nb = 1; nb <= 8; nb *= 2) {
        gex_RMA_Value_t v = (gex_RMA_Value_t)0x1122334455667788ull >> (64 - 8 * nb) ;
        v += me;
        gex_RMA_PutBlockingVal(tm, peer, at(peer, 8192 + 16 * nb), v, nb, 0);
        gex_Event_Wait(gex_RMA_PutNBVal(tm, peer, at(peer, 8192 + 16 * nb + 8), v + 1, nb, 0));
        BARRIER();
        gex_RMA_Value_t want = ((gex_RMA_Value_t)0x1122334455667788ull >> (64 - 8 * nb)) + prev;
        gex_RMA_Value_t got = 0;
        memcpy(&got, seg + 8192 + 16 * nb, nb);
        CHECKF(got == want, "PutVal %zu: %lx", nb, (unsigned long)got);
        CHECK(gex_RMA_GetBlockingVal(tm, peer, at(peer, 8192 + 16 * nb + 8), nb, 0) ==
              ((gex_RMA_Value_t)0x1122334455667788ull >> (64 - 8 * nb)) + me + 1);
        BARRIER();
    }
    gex_RMA_PutNBIVal(tm, peer, at(peer, 9000), 42, 4, 0);
    gex_NBI_Wait(GEX_EC_ALL, 0);

    /* Non-blocking barrier. */
    gex_Event_t b = gex_Coll_BarrierNB(tm, 0);
    while (gex_Event_Test(b) != GASNET_OK) gasnet_AMPoll();
    CHECK(*(uint32_t *)(seg + 9000) == 42);
    b = gex_Coll_BarrierNB(tm, 0);
    gex_Event_Wait(b);

    /* GASNet-1 names. */
    int x = 1000 + (int)me, y = 0;
    gasnet_put(peer, at(peer, 10000), &x, sizeof x);
    BARRIER();
    gasnet_get(&y, me, at(me, 10000), sizeof y);
    CHECK(y == 1000 + (int)prev);
    gasnet_handle_t h = gasnet_get_nb(&y, peer, at(peer, 10000), sizeof y);
    gasnet_wait_syncnb(h);
    CHECK(y == 1000 + (int)me);
    gasnet_put_nbi(peer, at(peer, 10008), &x, sizeof x);
    gasnet_wait_syncnbi_puts();
    CHECK(gasnet_get_val(peer, at(peer, 10008), 4) == (gex_RMA_Value_t)(1000 + me));
    BARRIER();
    if (me == 0) printf("rma: ok\n");
    gasnet_exit(0);
    return 1;
}
