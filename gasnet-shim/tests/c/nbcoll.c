/* Non-blocking collectives are non-blocking: each *NB call returns before the other members
 * have entered it, and a member that only polls (GASNET_BLOCKUNTIL) still does its part.
 * Each case below hangs (the job's timeout) if a call waits for the others:
 *  - ReduceToOneNB / ReduceToAllNB / BarrierNB on a split team: team rank 0 enters first
 *    and only then sends the AM that lets the others enter;
 *  - BroadcastNB from 0 (4+ ranks): rank 2 forwards to rank 3 while it waits, by polling
 *    only, for an AM that rank 3 sends once its broadcast is complete; then while it waits
 *    in the split-phase barrier, which rank 3 enters once its broadcast is complete.
 * Results are checked: broadcasts of 1 B to 200 KB (past a Medium: sent in parts) from
 * every root, several collectives outstanding at once and completed out of order, a
 * non-commutative user reduction (2x2 matrix products in rank order) to every root. */
#include "check.h"
#include <gasnet_coll.h>
#include <stdint.h>

static volatile int go;
static void on_go(gex_Token_t t) { (void)t; go++; }

static gex_TM_t tm;
static gex_Rank_t me, n;

/* 2x2 matrices of uint64_t (mod 2^64): arg2_and_out = arg1 x arg2_and_out. */
static void matmul(const void *a, void *io, size_t count, const void *cdata) {
    CHECK(cdata == (void *)0x77);
    const uint64_t *x = a;
    uint64_t *y = io;
    for (size_t i = 0; i < count; i++, x += 4, y += 4) {
        uint64_t r[4] = {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
                         x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
        memcpy(y, r, sizeof r);
    }
}
static void rank_matrix(gex_Rank_t r, uint64_t *m) {
    m[0] = r + 1; m[1] = 2 * r + 3; m[2] = r * r + 5; m[3] = 7;
}

static void wait_go(int k) { GASNET_BLOCKUNTIL(go >= k); }
static void send_go(gex_TM_t t, gex_Rank_t to) { gex_AM_RequestShort0(t, to, 200, 0); }

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_Segment_t s;
    gex_Client_Init(&c, &ep, &tm, "nbcoll", &argc, &argv, 0);
    gex_AM_Entry_t tab[] = {{200, (gex_AM_Fn_t)on_go, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0}};
    gex_EP_RegisterHandlers(ep, tab, 1);
    gex_Segment_Attach(&s, tm, 1 << 16);
    me = gex_TM_QueryRank(tm);
    n = gex_TM_QuerySize(tm);
    int gos = 0;

    /* Reductions: rank 0 enters, then lets the others in. */
    int64_t v = me + 1, sum = -1;
    if (me == 0) {
        gex_Event_t e = gex_Coll_ReduceToOneNB(tm, 0, &sum, &v, GEX_DT_I64, 8, 1, GEX_OP_ADD, 0, 0, 0);
        for (gex_Rank_t r = 1; r < n; r++) send_go(tm, r);
        gex_Event_Wait(e);
        CHECKF(sum == (int64_t)n * (n + 1) / 2, "sum %lld", (long long)sum);
    } else {
        wait_go(++gos);
        gex_Event_Wait(gex_Coll_ReduceToOneNB(tm, 0, &sum, &v, GEX_DT_I64, 8, 1, GEX_OP_ADD, 0, 0, 0));
        CHECK(sum == -1); /* not the root: untouched */
    }
    int64_t all = -1;
    if (me == 0) {
        gex_Event_t e = gex_Coll_ReduceToAllNB(tm, &all, &v, GEX_DT_I64, 8, 1, GEX_OP_MAX, 0, 0, 0);
        for (gex_Rank_t r = 1; r < n; r++) send_go(tm, r);
        gex_Event_Wait(e);
    } else {
        wait_go(++gos);
        gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &all, &v, GEX_DT_I64, 8, 1, GEX_OP_MAX, 0, 0, 0));
    }
    CHECKF(all == (int64_t)n, "max %lld", (long long)all);

    /* A split team's barrier: its rank 0 enters, then lets the others in. */
    gex_TM_t half;
    gex_TM_Split(&half, tm, (int)(me % 2), (int)me, NULL, 0, 0);
    gex_Rank_t hme = gex_TM_QueryRank(half), hn = gex_TM_QuerySize(half);
    if (hme == 0) {
        gex_Event_t e = gex_Coll_BarrierNB(half, 0);
        for (gex_Rank_t r = 1; r < hn; r++) send_go(half, r);
        gex_Event_Wait(e);
    } else {
        wait_go(++gos);
        gex_Event_Wait(gex_Coll_BarrierNB(half, 0));
    }
    BARRIER();

    /* A broadcast forwarded by a member that only polls. */
    if (n >= 4) {
        int64_t x = me == 0 ? 4242 : -1;
        gex_Event_t e = gex_Coll_BroadcastNB(tm, 0, &x, &x, sizeof x, 0);
        if (me == 2) { /* rank 3's parent in the binomial tree from 0 */
            wait_go(++gos); /* polls only: the broadcast must reach rank 3 meanwhile */
            gex_Event_Wait(e);
        } else {
            gex_Event_Wait(e);
            if (me == 3) send_go(tm, 2);
        }
        CHECKF(x == 4242, "broadcast got %lld", (long long)x);
        BARRIER();
        /* ... and while it waits in the split-phase barrier, before its own event: the
         * root enters only once rank 2 has, so the data reaches rank 2 in the barrier. */
        x = me == 0 ? 4343 : -1;
        if (me == 0) wait_go(++gos);
        e = gex_Coll_BroadcastNB(tm, 0, &x, &x, sizeof x, 0);
        if (me == 2) {
            send_go(tm, 0);
            BARRIER(); /* rank 3 enters it only once its broadcast is complete */
            gex_Event_Wait(e);
        } else {
            gex_Event_Wait(e);
            BARRIER();
        }
        CHECKF(x == 4343, "broadcast got %lld", (long long)x);
    }

    /* Broadcasts of every size class from every root. */
    size_t sizes[] = {1, 8, 1000, 200000};
    for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t len = sizes[k];
        unsigned char *b = malloc(len);
        CHECK(b);
        for (gex_Rank_t root = 0; root < n; root++) {
            for (size_t i = 0; i < len; i++) b[i] = me == root ? (unsigned char)(i * 7 + root) : 0xEE;
            gex_Event_Wait(gex_Coll_BroadcastNB(tm, root, b, b, len, 0));
            for (size_t i = 0; i < len; i++)
                CHECKF(b[i] == (unsigned char)(i * 7 + root), "len %zu root %u byte %zu: %u", len, root, i, b[i]);
        }
        free(b);
    }

    /* Several outstanding at once, completed in reverse order. */
    enum { K = 6 };
    int64_t in[K], out[K];
    gex_Event_t ev[K];
    for (int i = 0; i < K; i++) {
        in[i] = (int64_t)(me + 1) * (i + 1);
        out[i] = -1;
        ev[i] = gex_Coll_ReduceToAllNB(tm, &out[i], &in[i], GEX_DT_I64, 8, 1, GEX_OP_ADD, 0, 0, 0);
    }
    for (int i = K - 1; i >= 0; i--) gex_Event_Wait(ev[i]);
    for (int i = 0; i < K; i++)
        CHECKF(out[i] == (int64_t)(i + 1) * n * (n + 1) / 2, "reduction %d: %lld", i, (long long)out[i]);

    /* A non-commutative user reduction, to every root: m(0) x m(1) x ... x m(n-1). */
    uint64_t mine[2][4], want[4] = {1, 0, 0, 1}, got[2][4];
    rank_matrix(me, mine[0]);
    rank_matrix(me + 100, mine[1]);
    for (gex_Rank_t root = 0; root < n; root++) {
        for (int e = 0; e < 2; e++) {
            uint64_t acc[4] = {1, 0, 0, 1}, m[4];
            for (gex_Rank_t r = 0; r < n; r++) {
                rank_matrix(r + 100 * e, m);
                uint64_t t[4];
                memcpy(t, m, sizeof t);
                matmul(acc, t, 1, (void *)0x77);
                memcpy(acc, t, sizeof acc);
            }
            if (e == 0) memcpy(want, acc, sizeof want);
            if (e == 1) memcpy(got[1], acc, sizeof acc); /* reuse as the second's expectation */
        }
        uint64_t second[4];
        memcpy(second, got[1], sizeof second);
        memset(got, 0, sizeof got);
        gex_Event_Wait(gex_Coll_ReduceToOneNB(tm, root, got, mine, GEX_DT_USER, 32, 2, GEX_OP_USER_NC,
                                              matmul, (void *)0x77, 0));
        if (me == root) {
            CHECKF(!memcmp(got[0], want, sizeof want), "root %u: matrix product out of order", root);
            CHECKF(!memcmp(got[1], second, sizeof second), "root %u: second element", root);
        }
    }

    BARRIER();
    if (me == 0) printf("nbcoll: ok with %u ranks\n", n);
    gasnet_exit(0);
    return 1;
}
