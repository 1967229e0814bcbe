/* Several endpoints per client (gex_EP_Create, GASNET_MAXEPS > 1): endpoints 1 and 2
 * beside the primordial one, each with its own handler table (the same indices bound
 * to different functions) and its own segment (gex_Segment_Create + gex_EP_BindSegment +
 * gex_EP_PublishBoundSegment of both at once; endpoint 0 attaches). For every pair
 * (local l, remote r), through gex_TM_Pair(ep_l, r): Short, Medium and Long requests run
 * endpoint r's handlers at the peer (gex_Token_Info names endpoint r), the replies run
 * endpoint l's handlers here, Longs land in endpoint r's segment only; puts and gets
 * reach endpoint r's segment, gex_EP_QueryBoundSegmentNB finds it; endpoints up to
 * GASNET_MAXEPS, then GASNET_ERR_RESOURCE.
 * argv[1] picks a bad-input case instead: "pair_barrier" (a collective on a pair team),
 * "ep_unregistered" (a handler index endpoint 1 of the peer lacks). */
#include "check.h"
#define NEP 3
#define SEGLEN (1 << 16)
static gex_EP_t eps[NEP];
static uint8_t *segbase[NEP];
static volatile int replies[NEP][NEP], longs[NEP];

/* Which local endpoint a token arrived on (its index), checked against `want`. */
static unsigned on_ep(gex_Token_t t, unsigned want) {
    gex_Token_Info_t info;
    CHECK(gex_Token_Info(t, &info, GEX_TI_EP | GEX_TI_SRCRANK) & GEX_TI_EP);
    CHECKF(info.gex_ep == eps[want], "handler of endpoint %u ran on endpoint %u", want,
           (unsigned)gex_EP_QueryIndex(info.gex_ep));
    return gex_EP_QueryIndex(info.gex_ep);
}

/* index 200 on endpoint E: a Short request from endpoint l; replies with E's index. */
#define SHORT_REQ(E) \
    static void short_req##E(gex_Token_t t, gex_AM_Arg_t l, gex_AM_Arg_t r) { \
        CHECK(r == E && on_ep(t, E) == E); \
        gex_AM_ReplyShort2(t, 201, 0, l, E); \
    }
/* index 201 on endpoint E: the reply, on the requesting endpoint. */
#define SHORT_REP(E) \
    static void short_rep##E(gex_Token_t t, gex_AM_Arg_t l, gex_AM_Arg_t r) { \
        CHECK(l == E && on_ep(t, E) == E); \
        replies[E][r]++; \
    }
/* index 202 on endpoint E: a Medium whose bytes are E + l; replies with a Medium. */
#define MED_REQ(E) \
    static void med_req##E(gex_Token_t t, void *buf, size_t n, gex_AM_Arg_t l) { \
        CHECK(n == 100 && on_ep(t, E) == E); \
        for (size_t i = 0; i < n; i++) CHECK(((uint8_t *)buf)[i] == (uint8_t)(E * 16 + l)); \
        uint8_t b[40]; memset(b, E, sizeof b); \
        gex_AM_ReplyMedium1(t, 203, b, sizeof b, GEX_EVENT_NOW, 0, l); \
    }
#define MED_REP(E) \
    static void med_rep##E(gex_Token_t t, void *buf, size_t n, gex_AM_Arg_t l) { \
        CHECK(l == E && n == 40 && on_ep(t, E) == E); \
        unsigned r = ((uint8_t *)buf)[0]; \
        for (size_t i = 0; i < n; i++) CHECK(((uint8_t *)buf)[i] == r); \
        replies[E][r] += 100; \
    }
/* index 204 on endpoint E: a Long that must have landed in E's own segment. */
#define LONG_REQ(E) \
    static void long_req##E(gex_Token_t t, void *buf, size_t n, gex_AM_Arg_t l) { \
        CHECK(on_ep(t, E) == E); \
        CHECKF((uint8_t *)buf == segbase[E] + 4096 * (1 + l), "Long at %p, endpoint %u's segment at %p", buf, E, (void *)segbase[E]); \
        CHECK(n == 3000 && ((uint8_t *)buf)[0] == 0xA0 + l && ((uint8_t *)buf)[n - 1] == 0xA0 + l); \
        longs[E]++; \
    }
SHORT_REQ(0) SHORT_REQ(1) SHORT_REQ(2)
SHORT_REP(0) SHORT_REP(1) SHORT_REP(2)
MED_REQ(0) MED_REQ(1) MED_REQ(2)
MED_REP(0) MED_REP(1) MED_REP(2)
LONG_REQ(0) LONG_REQ(1) LONG_REQ(2)
static gex_AM_Fn_t fns[NEP][5] = {
    {(gex_AM_Fn_t)short_req0, (gex_AM_Fn_t)short_rep0, (gex_AM_Fn_t)med_req0, (gex_AM_Fn_t)med_rep0, (gex_AM_Fn_t)long_req0},
    {(gex_AM_Fn_t)short_req1, (gex_AM_Fn_t)short_rep1, (gex_AM_Fn_t)med_req1, (gex_AM_Fn_t)med_rep1, (gex_AM_Fn_t)long_req1},
    {(gex_AM_Fn_t)short_req2, (gex_AM_Fn_t)short_rep2, (gex_AM_Fn_t)med_req2, (gex_AM_Fn_t)med_rep2, (gex_AM_Fn_t)long_req2},
};
static void only_on_ep0(gex_Token_t t) { (void)t; }

int main(int argc, char **argv) {
    gex_Client_t c; gex_TM_t tm; gex_Segment_t seg;
    CHECK(gex_Client_Init(&c, &eps[0], &tm, "multiep", &argc, &argv, 0) == GASNET_OK);
    gex_Rank_t me = gex_TM_QueryRank(tm), n = gex_TM_QuerySize(tm), peer = (me + 1) % n;
    const char *what = argc > 1 ? argv[1] : "";
    CHECK(GASNET_MAXEPS >= NEP);
    CHECK(gex_EP_QueryIndex(eps[0]) == 0);
    gex_EP_t bad;
    CHECK(gex_EP_Create(&bad, c, 0, 0) == GASNET_ERR_BAD_ARG); /* no capability */
    for (unsigned e = 1; e < NEP; e++) {
        CHECK(gex_EP_Create(&eps[e], c, GEX_EP_CAPABILITY_ALL, 0) == GASNET_OK);
        CHECK(gex_EP_QueryIndex(eps[e]) == e && eps[e] != eps[0] && eps[e] != eps[e - 1]);
        CHECK(gex_EP_QueryClient(eps[e]) == c);
        CHECK(gex_EP_QuerySegment(eps[e]) == GEX_SEGMENT_INVALID);
    }
    for (unsigned e = 0; e < NEP; e++) {
        gex_AM_Entry_t t[] = {
            {200, fns[e][0], GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 2, 0, 0},
            {201, fns[e][1], GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 2, 0, 0},
            {202, fns[e][2], GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, 0, 0},
            {203, fns[e][3], GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 1, 0, 0},
            {204, fns[e][4], GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 1, 0, 0},
            {222, (gex_AM_Fn_t)only_on_ep0, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        };
        CHECK(gex_EP_RegisterHandlers(eps[e], t, e == 0 ? 6 : 5) == GASNET_OK);
    }
    CHECK(gex_Segment_Attach(&seg, tm, SEGLEN) == GASNET_OK);
    CHECK(gex_EP_QuerySegment(eps[0]) == seg);
    segbase[0] = gex_Segment_QueryAddr(seg);
    gex_Segment_t s[NEP];
    for (unsigned e = 1; e < NEP; e++) {
        CHECK(gex_Segment_Create(&s[e], c, NULL, SEGLEN, GEX_MK_HOST, 0) == GASNET_OK);
        gex_EP_BindSegment(eps[e], s[e], 0);
        CHECK(gex_EP_QuerySegment(eps[e]) == s[e]);
        segbase[e] = gex_Segment_QueryAddr(s[e]);
        CHECK(segbase[e] != segbase[0]);
    }
    CHECK(gex_EP_PublishBoundSegment(tm, &eps[1], NEP - 1, 0) == GASNET_OK);

    if (!strcmp(what, "pair_barrier")) {
        gex_Event_Wait(gex_Coll_BarrierNB(gex_TM_Pair(eps[1], 1), 0));
        printf("returned\n");
        return 0;
    }
    if (!strcmp(what, "ep_unregistered")) {
        if (me == 0) gex_AM_RequestShort0(gex_TM_Pair(eps[0], 1), peer, 222, 0);
        BARRIER();
        BARRIER();
        printf("returned\n");
        return 0;
    }

    for (unsigned l = 0; l < NEP; l++) {
        for (unsigned r = 0; r < NEP; r++) {
            gex_TM_t p = gex_TM_Pair(eps[l], r);
            CHECK(gex_TM_QueryEP(p) == eps[l]);
            CHECK(gex_TM_QueryRank(p) == gex_System_QueryJobRank() && gex_TM_QuerySize(p) == n);
            CHECK(gex_TM_TranslateRankToJobrank(p, peer) == peer);
            /* the peer's segment of endpoint r */
            void *owner = NULL; uintptr_t size = 0;
            gex_Event_Wait(gex_EP_QueryBoundSegmentNB(p, peer, &owner, NULL, &size, 0));
            CHECK(owner && size >= SEGLEN);
            /* Short and Medium round trips */
            gex_AM_RequestShort2(p, peer, 200, 0, l, r);
            GASNET_BLOCKUNTIL(replies[l][r] == 1);
            uint8_t b[100]; memset(b, r * 16 + l, sizeof b);
            gex_AM_RequestMedium1(p, peer, 202, b, sizeof b, GEX_EVENT_NOW, 0, l);
            GASNET_BLOCKUNTIL(replies[l][r] == 101);
            /* a Long into endpoint r's segment at the peer, at 4096 * (1 + l) */
            uint8_t lb[3000]; memset(lb, 0xA0 + l, sizeof lb);
            gex_AM_RequestLong1(p, peer, 204, lb, sizeof lb, (uint8_t *)owner + 4096 * (1 + l), GEX_EVENT_NOW, 0, l);
            /* put and get of endpoint r's segment, at 32768 + 64 * l */
            uint64_t v = 1000000 * r + 1000 * l + me, w = 0;
            gex_RMA_PutBlocking(p, peer, (uint8_t *)owner + 32768 + 64 * l, &v, 8, 0);
            gex_RMA_GetBlocking(p, &w, peer, (uint8_t *)owner + 32768 + 64 * l, 8, 0);
            CHECK(w == v);
            CHECK(gex_RMA_GetBlockingVal(p, peer, (uint8_t *)owner + 32768 + 64 * l, 8, 0) == v);
        }
    }
    /* Every rank's Longs from its predecessor (one per local endpoint of the sender) */
    for (unsigned r = 0; r < NEP; r++) GASNET_BLOCKUNTIL(longs[r] == NEP);
    BARRIER();
    gex_Rank_t prev = (me + n - 1) % n;
    for (unsigned r = 0; r < NEP; r++) {
        for (unsigned l = 0; l < NEP; l++) {
            uint64_t got;
            memcpy(&got, segbase[r] + 32768 + 64 * l, 8);
            CHECKF(got == 1000000 * r + 1000 * l + prev, "endpoint %u's segment slot %u: %llu", r, l, (unsigned long long)got);
        }
        /* nothing of the others' Longs or puts landed past them */
        for (size_t i = 4096 * (1 + NEP); i < 32768; i++) CHECK(segbase[r][i] == 0);
    }
    BARRIER();
    /* endpoints up to GASNET_MAXEPS, then GASNET_ERR_RESOURCE */
    unsigned made = NEP;
    gex_EP_t more;
    while (made < 100 && gex_EP_Create(&more, c, GEX_EP_CAPABILITY_AM, 0) == GASNET_OK) {
        CHECK(gex_EP_QueryIndex(more) == made);
        made++;
    }
    CHECKF(made == GASNET_MAXEPS, "%u endpoints", made);
    CHECK(gex_EP_Create(&more, c, GEX_EP_CAPABILITY_ALL, 0) == GASNET_ERR_RESOURCE);
    if (me == 0) printf("multiep: ok\n");
    gasnet_exit(0);
    return 1;
}
