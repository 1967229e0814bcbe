/* coll_lat.c: time per collective (us; every rank enters, then waits for its event), the
 * median of REPS passes of ITERS calls each, printed by rank 0 as CSV: impl,op,us.
 *   coll_lat IMPL [ITERS] [REPS]
 * ops: barrier (primordial team), barrier_split (a team of even / odd ranks), bcast8
 * (BroadcastNB of 8 bytes, the root moving round the team), allreduce8 (ReduceToAllNB of
 * one int64, ADD), reduce8 (ReduceToOneNB to rank 0), allreduce8_x8 (eight started, then
 * waited; per collective). */
#include <gasnetex.h>
#include <gasnet_coll.h>
#include <gasnet_tools.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static gex_TM_t tm, half;
static gex_Rank_t me, n;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void one(int op, long i) {
    int64_t v = me + i, out = 0;
    switch (op) {
    case 0: gex_Event_Wait(gex_Coll_BarrierNB(tm, 0)); break;
    case 1: gex_Event_Wait(gex_Coll_BarrierNB(half, 0)); break;
    case 2: gex_Event_Wait(gex_Coll_BroadcastNB(tm, (gex_Rank_t)(i % n), &v, &v, 8, 0)); break;
    case 3: gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &out, &v, GEX_DT_I64, 8, 1, GEX_OP_ADD, 0, 0, 0)); break;
    case 4: gex_Event_Wait(gex_Coll_ReduceToOneNB(tm, 0, &out, &v, GEX_DT_I64, 8, 1, GEX_OP_ADD, 0, 0, 0)); break;
    case 5: {
        int64_t o[8], x[8];
        gex_Event_t e[8];
        for (int k = 0; k < 8; k++) { x[k] = v + k; e[k] = gex_Coll_ReduceToAllNB(tm, &o[k], &x[k], GEX_DT_I64, 8, 1, GEX_OP_ADD, 0, 0, 0); }
        gex_Event_WaitAll(e, 8, 0);
        break;
    }
    }
}

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_Segment_t s;
    gex_Client_Init(&c, &ep, &tm, "coll_lat", &argc, &argv, 0);
    gex_Segment_Attach(&s, tm, 1 << 16);
    me = gex_TM_QueryRank(tm);
    n = gex_TM_QuerySize(tm);
    gex_TM_Split(&half, tm, (int)(me % 2), (int)me, NULL, 0, 0);
    const char *impl = argc > 1 ? argv[1] : "gasnet-shim";
    long iters = argc > 2 ? atol(argv[2]) : 20000;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    const char *names[] = {"barrier", "barrier_split", "bcast8", "allreduce8", "reduce8", "allreduce8_x8"};
    for (int op = 0; op < 6; op++) {
        double t[64];
        long it = op == 5 ? iters / 8 : iters;
        for (long i = 0; i < it / 10; i++) one(op, i); /* warm-up */
        for (int r = 0; r < reps && r < 64; r++) {
            gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
            gasnett_tick_t t0 = gasnett_ticks_now();
            for (long i = 0; i < it; i++) one(op, i);
            t[r] = gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1e3 / (double)(op == 5 ? it * 8 : it);
        }
        qsort(t, reps, sizeof *t, cmp);
        if (me == 0) printf("%s,%s,%.3f\n", impl, names[op], t[reps / 2]);
    }
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    gasnet_exit(0);
    return 1;
}
