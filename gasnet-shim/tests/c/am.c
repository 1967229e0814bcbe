/* Core active messages on 2-4 ranks, every result checked: Short round trips with 0..16
 * arguments (am_args.inc), Medium of every size class up to the maximum (with 2 and 16
 * arguments) echoed back by Medium replies, Long payloads landing at the right offset of
 * the peer's segment and Long replies into ours, negotiated payload (Prepare/Commit),
 * gex_Token_Info, handler-safe locks, GEX_FLAG_IMMEDIATE under a full channel, and
 * GASNET_BLOCKUNTIL. Ends with gasnet_exit(0). */
#include <unistd.h>
#include "check.h"

enum { H_REQ_SHORT0 = 100, H_REP_SHORT0 = 130, H_MED = 160, H_MED_REP, H_MED16, H_LONG,
       H_LONG_ACK, H_LONG_REP, H_NP, H_IMM, H_INFO, H_LREQ, H_IMM_TOTAL, H_NP_REP };

static gasnett_atomic_t replies = gasnett_atomic_init(0);
#include "am_args.inc"

static gex_Rank_t me, n;
static uint8_t *seg;           /* this rank's segment */
static void *peer_seg;         /* the peer's segment, in the peer's address space */
static gex_HSL_t hsl = GEX_HSL_INITIALIZER;
static long hsl_count;
static gasnett_atomic_t imm_got = gasnett_atomic_init(0);
static int imm_bad;
static volatile int imm_total = -1;
static void imm_total_req(gex_Token_t t, gex_AM_Arg_t a0) { (void)t; imm_total = a0; }

static uint8_t pat(size_t i, size_t len, int salt) { return (uint8_t)(i * 7 + len + salt); }

static void med_req(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0, gex_AM_Arg_t a1) {
    const uint8_t *b = buf;
    CHECK((size_t)a0 == len);
    for (size_t i = 0; i < len; i++) CHECKF(b[i] == pat(i, len, a1), "byte %zu of %zu", i, len);
    CHECK(((uintptr_t)buf & 7) == 0);
    gex_AM_ReplyMedium2(t, H_MED_REP, buf, len, GEX_EVENT_NOW, 0, a0, a1 + 1);
}
static void med_rep(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0, gex_AM_Arg_t a1) {
    (void)t;
    const uint8_t *b = buf;
    CHECK((size_t)a0 == len);
    for (size_t i = 0; i < len; i++) CHECK(b[i] == pat(i, len, a1 - 1));
    gasnett_atomic_increment(&replies, 0);
}
static void med16(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0, gex_AM_Arg_t a1,
                  gex_AM_Arg_t a2, gex_AM_Arg_t a3, gex_AM_Arg_t a4, gex_AM_Arg_t a5,
                  gex_AM_Arg_t a6, gex_AM_Arg_t a7, gex_AM_Arg_t a8, gex_AM_Arg_t a9,
                  gex_AM_Arg_t a10, gex_AM_Arg_t a11, gex_AM_Arg_t a12, gex_AM_Arg_t a13,
                  gex_AM_Arg_t a14, gex_AM_Arg_t a15) {
    gex_AM_Arg_t a[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
    const uint8_t *b = buf;
    for (int i = 0; i < 16; i++) CHECK(a[i] == -i);
    for (size_t i = 0; i < len; i++) CHECK(b[i] == pat(i, len, 3));
    gex_AM_ReplyShort0(t, H_REP_SHORT0, 0);
}
/* Long request: the payload is at buf == the destination asked for; acknowledged. */
static void long_req(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t off, gex_AM_Arg_t salt) {
    CHECK(buf == seg + off);
    const uint8_t *b = buf;
    for (size_t i = 0; i < len; i++) CHECKF(b[i] == pat(i, len, salt), "Long byte %zu of %zu", i, len);
    gex_Token_Info_t ti;
    CHECK(gex_Token_Info(t, &ti, GEX_TI_ALL) == GEX_TI_ALL);
    CHECK(ti.gex_is_long && ti.gex_is_req && ti.gex_srcrank == (me + n - 1) % n);
    CHECK(ti.gex_entry && ti.gex_entry->gex_index == H_LONG);
    CHECK(strcmp(ti.gex_entry->gex_name, "long_req") == 0);
    gex_AM_ReplyShort1(t, H_LONG_ACK, 0, (gex_AM_Arg_t)len);
}
static void long_ack(gex_Token_t t, gex_AM_Arg_t len) { (void)t; (void)len; gasnett_atomic_increment(&replies, 0); }
/* A Long reply: the request handler sends len bytes into the requester's segment. */
static void long_rep_req(gex_Token_t t, gex_AM_Arg_t len, gex_AM_Arg_t dest_hi, gex_AM_Arg_t dest_lo) {
    static uint8_t src[70000];
    for (int i = 0; i < len; i++) src[i] = pat(i, len, 9);
    void *dest = (void *)(((uintptr_t)(uint32_t)dest_hi << 32) | (uint32_t)dest_lo);
    gex_AM_ReplyLong1(t, H_LONG_REP, src, len, dest, GEX_EVENT_NOW, 0, len);
}
static volatile int long_rep_seen;
static void long_rep(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0) {
    gex_Token_Info_t ti;
    gex_Token_Info(t, &ti, GEX_TI_IS_REQ | GEX_TI_IS_LONG);
    CHECK(!ti.gex_is_req && ti.gex_is_long);
    CHECK((size_t)a0 == len && buf == seg + (512 << 10));
    for (size_t i = 0; i < len; i++) CHECKF(((uint8_t *)buf)[i] == pat(i, len, 9), "byte %zu of %zu from %u: %d", i, len, ti.gex_srcrank, ((uint8_t *)buf)[i]);
    long_rep_seen = 1;
}
/* Negotiated payload: the handler checks what the sender wrote into the prepared buffer. */
static void np_req(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0) {
    CHECK((size_t)a0 == len);
    for (size_t i = 0; i < len; i++) CHECK(((uint8_t *)buf)[i] == (uint8_t)(i ^ 0x5a));
    /* A negotiated reply too (written in place in the requester's memory where the
     * driver allows), of 1-64 bytes, fewer committed than prepared. */
    size_t rl = len % 64 + 1;
    gex_AM_SrcDesc_t sd = gex_AM_PrepareReplyMedium(t, NULL, rl, 64, NULL, 0, 1);
    CHECK(gex_AM_SrcDescSize(sd) >= rl);
    uint8_t *r = gex_AM_SrcDescAddr(sd);
    for (size_t i = 0; i < rl; i++) r[i] = (uint8_t)(i * 7 + rl);
    gex_AM_CommitReplyMedium1(sd, H_NP_REP, rl, (gex_AM_Arg_t)rl);
}
static void np_rep(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0) {
    (void)t;
    CHECK(len == (size_t)a0 && len >= 1 && len <= 64);
    for (size_t i = 0; i < len; i++) CHECK(((uint8_t *)buf)[i] == (uint8_t)(i * 7 + len));
    gasnett_atomic_increment(&replies, 0);
}
static void imm_req(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t seq) {
    (void)t; (void)buf; (void)len;
    gasnett_atomic_val_t got = gasnett_atomic_read(&imm_got, 0);
    if ((gasnett_atomic_val_t)seq != got) imm_bad = 1; /* in order, none lost */
    gasnett_atomic_increment(&imm_got, 0);
}
static void info_req(gex_Token_t t, gex_AM_Arg_t a0) {
    (void)t; (void)a0;
    gex_HSL_Lock(&hsl);
    hsl_count++;
    gex_HSL_Unlock(&hsl);
}

static gex_AM_Entry_t table[] = {
    SHORT_ENTRIES
    {H_MED, (gex_AM_Fn_t)med_req, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 2, 0, "med_req"},
    {H_MED_REP, (gex_AM_Fn_t)med_rep, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 2, 0, "med_rep"},
    {H_MED16, (gex_AM_Fn_t)med16, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 16, 0, "med16"},
    {H_LONG, (gex_AM_Fn_t)long_req, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 2, 0, "long_req"},
    {H_LONG_ACK, (gex_AM_Fn_t)long_ack, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1, 0, "long_ack"},
    {H_LONG_REP, (gex_AM_Fn_t)long_rep, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REPLY, 1, 0, "long_rep"},
    {H_NP, (gex_AM_Fn_t)np_req, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, 0, "np_req"},
    {H_NP_REP, (gex_AM_Fn_t)np_rep, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 1, 0, "np_rep"},
    {H_IMM, (gex_AM_Fn_t)imm_req, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, 0, "imm_req"},
    {H_LREQ, (gex_AM_Fn_t)long_rep_req, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 3, 0, "long_rep_req"},
    {H_IMM_TOTAL, (gex_AM_Fn_t)imm_total_req, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, 0, "imm_total"},
    {0, (gex_AM_Fn_t)info_req, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, 0, "info_req"},
};

static void wait_replies(gasnett_atomic_val_t k) {
    GASNET_BLOCKUNTIL(gasnett_atomic_read(&replies, 0) == k);
    gasnett_atomic_set(&replies, 0, 0);
}

int main(int argc, char **argv) {
    gex_Client_t client; gex_EP_t ep; gex_TM_t tm; gex_Segment_t segment;
    CHECK(gex_Client_Init(&client, &ep, &tm, "am", &argc, &argv, 0) == GASNET_OK);
    me = gex_TM_QueryRank(tm); n = gex_TM_QuerySize(tm);
    CHECK(me == gex_System_QueryJobRank() && n == gex_System_QueryJobSize() && n >= 2);
    CHECK(gex_Segment_Attach(&segment, tm, 1 << 20) == GASNET_OK);
    seg = gex_Segment_QueryAddr(segment);
    CHECK(seg && gex_Segment_QuerySize(segment) >= (1 << 20));
    CHECK(gex_EP_RegisterHandlers(ep, table, sizeof table / sizeof table[0]) == GASNET_OK);
    gex_AM_Index_t h_info = table[sizeof table / sizeof table[0] - 1].gex_index;
    CHECK(h_info != 0); /* assigned and written back */
    gex_Rank_t peer = (me + 1) % n;
    void *local = 0; uintptr_t psize = 0;
    gex_Event_t ev = gex_EP_QueryBoundSegmentNB(tm, peer, &peer_seg, &local, &psize, 0);
    CHECK(ev == GEX_EVENT_INVALID && peer_seg && psize >= (1 << 20));
    CHECK(gex_AM_MaxArgs() >= 16);
    BARRIER();

    /* Short, 0..16 arguments. */
    for (int m = 0; m <= 16; m++) send_short[m](tm, peer);
    wait_replies(17);

    /* Medium: every size class up to the maximum; the reply echoes it. */
    size_t max = gex_AM_MaxRequestMedium(tm, peer, GEX_EVENT_NOW, 0, 2);
    CHECK(max >= gex_AM_LUBRequestMedium() && max >= 512);
    CHECK(gex_AM_MaxReplyMedium(tm, peer, GEX_EVENT_NOW, 0, 2) >= max);
    uint8_t *buf = malloc(max + 70000);
    size_t sizes[] = {0, 1, 7, 8, 9, 63, 64, 100, 1000, 4000, max / 2, max - 1, max};
    int ns = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        if (len > max) continue;
        for (size_t i = 0; i < len; i++) buf[i] = pat(i, len, (int)k);
        gex_Event_t lc = GEX_EVENT_NO_OP;
        CHECK(gex_AM_RequestMedium2(tm, peer, H_MED, buf, len, &lc, 0, (gex_AM_Arg_t)len, (gex_AM_Arg_t)k) == 0);
        CHECK(lc == GEX_EVENT_INVALID); /* local completion at return */
        ns++;
    }
    wait_replies(ns);
    size_t max16 = gex_AM_MaxRequestMedium(tm, peer, GEX_EVENT_NOW, 0, 16);
    CHECK(max16 <= max && max16 >= gex_AM_LUBRequestMedium());
    for (size_t i = 0; i < max16; i++) buf[i] = pat(i, max16, 3);
    CHECK(gex_AM_RequestMedium16(tm, peer, H_MED16, buf, max16, GEX_EVENT_NOW, 0,
          0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15) == 0);
    wait_replies(1);
    BARRIER();

    /* Long: payloads of every size class land at the offset asked for (the handler
     * checks buf == its segment + off); beyond one message they go by RMA or in chunks. */
    size_t lsizes[] = {0, 1, 8, 100, 3000, 9000, 65536, 70000};
    size_t off = 64;
    for (size_t k = 0; k < sizeof lsizes / sizeof lsizes[0]; k++) {
        size_t len = lsizes[k];
        for (size_t i = 0; i < len; i++) buf[i] = pat(i, len, (int)k);
        CHECK(gex_AM_RequestLong2(tm, peer, H_LONG, buf, len, (uint8_t *)peer_seg + off,
                                  GEX_EVENT_NOW, 0, (gex_AM_Arg_t)off, (gex_AM_Arg_t)k) == 0);
        wait_replies(1); /* the next Long overlaps this one's bytes */
        off += 8 * (k + 1);
    }
    CHECK(gex_AM_MaxRequestLong(tm, peer, GEX_EVENT_NOW, 0, 0) >= 70000);
    /* Negotiated Long requests with the library's buffer (on the direct path: the
     * destination in the peer's segment itself), committed to the address given at Prepare
     * (NULL) or to another one overlapping it (the bytes move there). */
    for (int k = 0; k < 6; k++) {
        size_t len = (size_t)k * 4099 % 70000 + 1, poff = 4096 + (size_t)k * 96;
        size_t coff = k % 2 ? poff + 40 : poff;
        gex_AM_SrcDesc_t lsd = gex_AM_PrepareRequestLong(tm, peer, NULL, len, len,
                                                         (uint8_t *)peer_seg + poff, NULL, 0, 2);
        CHECK(gex_AM_SrcDescSize(lsd) == len);
        uint8_t *lp = gex_AM_SrcDescAddr(lsd);
        for (size_t i = 0; i < len; i++) lp[i] = pat(i, len, 40 + k);
        gex_AM_CommitRequestLong2(lsd, H_LONG, len, k % 2 ? (uint8_t *)peer_seg + coff : NULL,
                                  (gex_AM_Arg_t)coff, 40 + k);
        wait_replies(1);
    }
    /* Long replies into this rank's segment, 8 B and 70000 B. */
    uintptr_t mydest = (uintptr_t)(seg + (512 << 10));
    int lens[] = {8, 70000};
    for (int k = 0; k < 2; k++) {
        long_rep_seen = 0;
        CHECK(gex_AM_RequestShort3(tm, peer, H_LREQ, 0, lens[k], (gex_AM_Arg_t)(mydest >> 32),
                                   (gex_AM_Arg_t)(uint32_t)mydest) == 0);
        GASNET_BLOCKUNTIL(long_rep_seen);
    }
    BARRIER();

    /* Negotiated payload: the library's buffer, filled in place, then committed. */
    gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestMedium(tm, peer, NULL, 16, 600, NULL, 0, 1);
    CHECK(sd != GEX_AM_SRCDESC_NO_OP);
    size_t sz = gex_AM_SrcDescSize(sd);
    CHECK(sz >= 16 && sz <= 600);
    uint8_t *p = gex_AM_SrcDescAddr(sd);
    for (size_t i = 0; i < sz; i++) p[i] = (uint8_t)(i ^ 0x5a);
    gex_AM_CommitRequestMedium1(sd, H_NP, sz, (gex_AM_Arg_t)sz);
    wait_replies(1);
    /* ... and the client's own buffer. */
    for (size_t i = 0; i < 32; i++) buf[i] = (uint8_t)(i ^ 0x5a);
    sd = gex_AM_PrepareRequestMedium(tm, peer, buf, 32, 32, NULL, 0, 1);
    CHECK(gex_AM_SrcDescAddr(sd) == buf && gex_AM_SrcDescSize(sd) == 32);
    gex_AM_CommitRequestMedium1(sd, H_NP, 32, 32);
    wait_replies(1);
    /* Many prepared requests written in place in the target's memory where the driver
     * offers it (shm; a copy elsewhere): every size up to the maximum, fewer bytes
     * committed than prepared, 16 arguments (an argument prefix in front of the payload),
     * and GEX_FLAG_IMMEDIATE (NULL only when there is no room now). */
    size_t npmax = gex_AM_MaxRequestMedium(tm, peer, GEX_EVENT_NOW, 0, 1);
    for (int k = 0; k < 300; k++) {
        size_t want = k == 0 ? npmax : 16 + (size_t)k * 211 % (npmax - 16);
        gex_Flags_t fl = k % 3 == 0 ? GEX_FLAG_IMMEDIATE : 0;
        sd = gex_AM_PrepareRequestMedium(tm, peer, NULL, want, want, NULL, fl, 1);
        if (sd == GEX_AM_SRCDESC_NO_OP) { CHECK(fl); continue; }
        CHECK(gex_AM_SrcDescSize(sd) == want);
        p = gex_AM_SrcDescAddr(sd);
        size_t len = want - (size_t)k % 9;
        for (size_t i = 0; i < len; i++) p[i] = (uint8_t)(i ^ 0x5a);
        gex_AM_CommitRequestMedium1(sd, H_NP, len, (gex_AM_Arg_t)len);
        wait_replies(1);
    }
    for (int k = 0; k < 20; k++) {
        size_t len = k == 0 ? max16 : (size_t)k * 331 % max16;
        sd = gex_AM_PrepareRequestMedium(tm, peer, NULL, len, len, NULL, 0, 16);
        p = gex_AM_SrcDescAddr(sd);
        for (size_t i = 0; i < len; i++) p[i] = pat(i, len, 3);
        gex_AM_CommitRequestMedium16(sd, H_MED16, len,
              0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15);
        wait_replies(1);
    }
    BARRIER();

    /* HSL: every rank bumps a counter on every rank, under the lock. */
    for (gex_Rank_t r = 0; r < n; r++) CHECK(gex_AM_RequestShort1(tm, r, h_info, 0, 0) == 0);
    GASNET_BLOCKUNTIL((gex_HSL_Lock(&hsl), hsl_count == (long)n ? (gex_HSL_Unlock(&hsl), 1) : (gex_HSL_Unlock(&hsl), 0)));
    BARRIER();

    /* GEX_FLAG_IMMEDIATE under a full channel: rank 0 injects into rank 1, which does not
     * poll for a while, until an injection is refused; then rank 1 drains and checks every
     * one arrived, in order. */
    if (me == 0) {
        long sent = 0;
        memset(buf, 1, 256);
        gasnett_tick_t t0 = gasnett_ticks_now();
        for (;;) {
            int r = gex_AM_RequestMedium1(tm, 1, H_IMM, buf, 256, GEX_EVENT_NOW, GEX_FLAG_IMMEDIATE, (gex_AM_Arg_t)sent);
            if (r != 0) break;
            sent++;
            CHECKF(gasnett_ticks_to_ns(gasnett_ticks_now() - t0) < 5000000000ull, "never refused after %ld", sent);
        }
        CHECK(sent > 0);
        CHECK(gex_AM_RequestShort1(tm, 1, H_IMM_TOTAL, 0, (gex_AM_Arg_t)sent) == 0); /* waits for room */
        printf("rank 0: %ld immediate AMs injected before the first refusal\n", sent);
    } else if (me == 1) {
        usleep(200 * 1000); /* not polling: the lane fills */
        GASNET_BLOCKUNTIL(imm_total >= 0 && gasnett_atomic_read(&imm_got, 0) == (gasnett_atomic_val_t)imm_total);
    }
    BARRIER();
    if (me == 1) CHECK(!imm_bad && gasnett_atomic_read(&imm_got, 0) > 0);
    BARRIER();
    free(buf);
    if (me == 0) printf("am: ok\n");
    gasnet_exit(0);
    return 1;
}
