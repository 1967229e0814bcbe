/* Collectives, teams, remote atomics, VIS and the tools header on 2-4 ranks, every result
 * checked: broadcast from every root (1 B-64 KiB), reductions to one and to all for every
 * type and operator and a user function, gex_TM_Split (even/odd ranks, reversed keys)
 * with collectives and RMA by team rank, atomics of every type from all ranks at once
 * (fetch-add totals, compare-and-swap), strided/indexed/vector put and get with the holes
 * untouched, and gasnett_* timers, atomics, locks, thread keys, environment. */
#include <pthread.h>
#include "check.h"
#include <gasnet_coll.h>
#include <gasnet_ratomic.h>
#include <gasnet_vis.h>

static gex_Rank_t me, n;
static uint8_t *seg;
static void **segs;
static void *at(gex_Rank_t r, size_t off) { return (uint8_t *)segs[r] + off; }

static void user_max_abs(const void *a, void *io, size_t count, const void *cdata) {
    const int64_t *x = a; int64_t *y = io;
    CHECK(cdata == (void *)0x1234);
    for (size_t i = 0; i < count; i++) {
        int64_t p = x[i] < 0 ? -x[i] : x[i], q = y[i] < 0 ? -y[i] : y[i];
        y[i] = p > q ? x[i] : y[i];
    }
}

static void collectives(gex_TM_t tm) {
    gex_Rank_t tme = gex_TM_QueryRank(tm), tn = gex_TM_QuerySize(tm);
    static uint8_t b[65536];
    for (gex_Rank_t root = 0; root < tn; root++)
        for (size_t len = 1; len <= 65536; len *= 16) {
            memset(b, 0, len);
            if (tme == root) for (size_t i = 0; i < len; i++) b[i] = (uint8_t)(i + root);
            gex_Event_Wait(gex_Coll_BroadcastNB(tm, root, b, b, len, 0));
            for (size_t i = 0; i < len; i++) CHECK(b[i] == (uint8_t)(i + root));
        }
    /* Reductions: every rank contributes (rank+1)*(i+1). */
    enum { K = 10 };
    int32_t i32[K], o32[K]; uint32_t u32[K], ou32[K]; int64_t i64[K], o64[K];
    uint64_t u64[K], ou64[K]; float f[K], of[K]; double d[K], od[K];
    for (int i = 0; i < K; i++) {
        i32[i] = (int32_t)((tme + 1) * (i + 1)) * (i % 2 ? -1 : 1); u32[i] = (tme + 1) * (i + 1);
        i64[i] = i32[i]; u64[i] = u32[i]; f[i] = (float)u32[i]; d[i] = (double)u32[i];
    }
    long sum = 0, prod = 1; for (gex_Rank_t r = 0; r < tn; r++) { sum += r + 1; prod *= r + 1; }
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, o32, i32, GEX_DT_I32, 4, K, GEX_OP_ADD, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, ou32, u32, GEX_DT_U32, 4, K, GEX_OP_MAX, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, o64, i64, GEX_DT_I64, 8, K, GEX_OP_MIN, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, ou64, u64, GEX_DT_U64, 8, K, GEX_OP_MULT, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, of, f, GEX_DT_FLT, 4, K, GEX_OP_ADD, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, od, d, GEX_DT_DBL, 8, K, GEX_OP_MAX, 0, 0, 0));
    for (int i = 0; i < K; i++) {
        CHECK(o32[i] == (int32_t)(sum * (i + 1)) * (i % 2 ? -1 : 1));
        CHECK(ou32[i] == tn * (uint32_t)(i + 1));
        CHECK(o64[i] == (i % 2 ? -(int64_t)tn * (i + 1) : (int64_t)(i + 1)));
        uint64_t p = 1; for (gex_Rank_t r = 0; r < tn; r++) p *= (r + 1) * (uint64_t)(i + 1);
        CHECK(ou64[i] == p);
        CHECK(of[i] == (float)(sum * (i + 1)));
        CHECK(od[i] == (double)(tn * (i + 1)));
    }
    (void)prod;
    uint32_t bits = 1u << tme, all = 0, any = 0, x = 0;
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &any, &bits, GEX_DT_U32, 4, 1, GEX_OP_OR, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &all, &bits, GEX_DT_U32, 4, 1, GEX_OP_AND, 0, 0, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &x, &bits, GEX_DT_U32, 4, 1, GEX_OP_XOR, 0, 0, 0));
    CHECK(any == (1u << tn) - 1 && all == (tn == 1) && x == (1u << tn) - 1);
    for (gex_Rank_t root = 0; root < tn; root++) {
        int32_t r = -1;
        gex_Event_Wait(gex_Coll_ReduceToOneNB(tm, root, &r, &i32[0], GEX_DT_I32, 4, 1, GEX_OP_ADD, 0, 0, 0));
        CHECK(tme == root ? r == (int32_t)sum : r == -1);
    }
    int64_t v = (tme % 2 ? -1 : 1) * (int64_t)(tme + 1) * 10, out = 0;
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &out, &v, GEX_DT_USER, 8, 1, GEX_OP_USER, user_max_abs, (void *)0x1234, 0));
    CHECK(out == ((tn - 1) % 2 ? -1 : 1) * (int64_t)tn * 10);
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
}

static void *tool_thread(void *arg) {
    static GASNETT_THREADKEY_DEFINE(key);
    gasnett_threadkey_set(key, arg);
    CHECK(gasnett_threadkey_get(key) == arg);
    gasnett_atomic_increment((gasnett_atomic_t *)arg, 0);
    return 0;
}

static void tools(void) {
    gasnett_tick_t t0 = gasnett_ticks_now();
    CHECK(gasnett_ticks_to_ns(gasnett_ticks_now() - t0) < 1000000000ull);
    CHECK(gasnett_tick_granularityus() > 0 && gasnett_tick_overheadus() >= 0);
    gasnett_atomic_t a = gasnett_atomic_init(5);
    gasnett_atomic_increment(&a, 0);
    CHECK(gasnett_atomic_read(&a, 0) == 6 && gasnett_atomic_compare_and_swap(&a, 6, 9, GASNETT_ATOMIC_ACQ));
    CHECK(!gasnett_atomic_compare_and_swap(&a, 6, 1, 0) && gasnett_atomic_add(&a, 1, 0) == 10);
    gasnett_atomic64_t a64 = gasnett_atomic64_init(1ull << 40);
    CHECK(gasnett_atomic64_add(&a64, 1, 0) == (1ull << 40) + 1 && gasnett_atomic64_swap(&a64, 3, 0) == (1ull << 40) + 1);
    gasnett_local_mb(); gasnett_local_wmb(); gasnett_local_rmb(); gasnett_compiler_fence();
    gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
    CHECK(gasnett_mutex_lock(&m) == 0 && gasnett_mutex_trylock(&m) != 0 && gasnett_mutex_unlock(&m) == 0);
    gasnett_cond_t cv = GASNETT_COND_INITIALIZER; gasnett_cond_signal(&cv); gasnett_cond_broadcast(&cv);
    gasnett_atomic_t cnt = gasnett_atomic_init(0);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], 0, tool_thread, &cnt);
    for (int i = 0; i < 3; i++) pthread_join(th[i], 0);
    CHECK(gasnett_atomic_read(&cnt, 0) == 3);
    gasnett_setenv("GASNET_TEST_X", "12k");
    CHECK(gasnett_getenv_int_withdefault("GASNET_TEST_X", 0, 1) == 12 * 1024);
    CHECK(gasnett_getenv_yesno_withdefault("GASNET_TEST_NOPE", 1) == 1);
    CHECK(strcmp(gasnett_getenv_str_withdefault("GASNET_TEST_NOPE", "d"), "d") == 0);
    CHECK(gasnett_cpu_count() >= 1 && strlen(gasnett_gethostname()) > 0);
    gasnett_sched_yield();
    gasnett_flush_streams();
}

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm; gex_Segment_t s;
    CHECK(gex_Client_Init(&c, &ep, &tm, "ext", &argc, &argv, 0) == GASNET_OK);
    me = gex_TM_QueryRank(tm); n = gex_TM_QuerySize(tm);
    CHECK(gex_Segment_Attach(&s, tm, 1 << 20) == GASNET_OK);
    seg = gex_Segment_QueryAddr(s);
    segs = malloc(n * sizeof *segs);
    for (gex_Rank_t r = 0; r < n; r++) gex_EP_QueryBoundSegmentNB(tm, r, &segs[r], NULL, NULL, 0);
    tools();
    BARRIER();
    collectives(tm);

    /* Teams: even and odd ranks, ordered by descending rank. */
    gex_TM_t half;
    gex_TM_Split(&half, tm, (int)(me % 2), -(int)me, NULL, 0, 0);
    gex_Rank_t hn = gex_TM_QuerySize(half), hme = gex_TM_QueryRank(half);
    CHECK(hn == (n + 1 - me % 2) / 2);
    CHECK(gex_TM_TranslateRankToJobrank(half, hme) == me);
    CHECK(gex_TM_TranslateRankToJobrank(half, 0) == me % 2 + 2 * (hn - 1));
    if (n % 2 == 0) CHECK(gex_TM_TranslateJobrankToRank(half, (me + 1) % n) == GEX_RANK_INVALID);
    CHECK(gex_TM_TranslateJobrankToRank(half, me) == hme);
    collectives(half);
    gex_Rank_t hpeer = (hme + 1) % hn;
    uint64_t mark = 0xabc0 + me, got = 0;
    CHECK(gex_RMA_PutBlocking(half, hpeer, at(gex_TM_TranslateRankToJobrank(half, hpeer), 64), &mark, 8, 0) == 0);
    gex_Event_Wait(gex_Coll_BarrierNB(half, 0));
    memcpy(&got, seg + 64, 8);
    CHECK(got == 0xabc0 + gex_TM_TranslateRankToJobrank(half, (hme + hn - 1) % hn));
    gex_TM_t none;
    gex_TM_Split(&none, tm, me == 0 ? 0 : -1, 0, NULL, 0, 0);
    CHECK(me == 0 ? none != GEX_TM_INVALID && gex_TM_QuerySize(none) == 1 : none == GEX_TM_INVALID);
    BARRIER();

    /* Atomics of every type, from all ranks at once, on rank 0's segment. */
    memset(seg + 4096, 0, 256);
    BARRIER();
    gex_AD_t ad32, adu32, ad64, adu64, adf, add;
    gex_AD_Create(&ad32, tm, GEX_DT_I32, GEX_OP_FADD | GEX_OP_FCAS | GEX_OP_GET | GEX_OP_SET | GEX_OP_INC, 0);
    gex_AD_Create(&adu32, tm, GEX_DT_U32, GEX_OP_ADD | GEX_OP_FOR | GEX_OP_GET, 0);
    gex_AD_Create(&ad64, tm, GEX_DT_I64, GEX_OP_FADD | GEX_OP_FMIN | GEX_OP_GET | GEX_OP_SWAP, 0);
    gex_AD_Create(&adu64, tm, GEX_DT_U64, GEX_OP_FXOR | GEX_OP_GET | GEX_OP_CAS, 0);
    gex_AD_Create(&adf, tm, GEX_DT_FLT, GEX_OP_FADD | GEX_OP_GET, 0);
    gex_AD_Create(&add, tm, GEX_DT_DBL, GEX_OP_FMAX | GEX_OP_ADD | GEX_OP_GET, 0);
    CHECK(gex_AD_QueryDT(add) == GEX_DT_DBL && gex_AD_QueryTM(ad32) == tm);
    enum { R = 500 };
    int32_t old32; int64_t old64; uint64_t oldu64; float oldf; double oldd;
    for (int i = 0; i < R; i++) {
        gex_AD_OpBlocking_I32(ad32, &old32, 0, at(0, 4096), GEX_OP_FADD, 2, 0, 0);
        gex_AD_OpNBI_U32(adu32, NULL, 0, at(0, 4100), GEX_OP_ADD, 3, 0, 0);
        gex_Event_Wait(gex_AD_OpNB_I64(ad64, &old64, 0, at(0, 4104), GEX_OP_FADD, -5, 0, 0));
        gex_AD_OpBlocking_FLT(adf, &oldf, 0, at(0, 4112), GEX_OP_FADD, 0.5f, 0, 0);
        gex_AD_OpBlocking_DBL(add, NULL, 0, at(0, 4120), GEX_OP_ADD, 0.25, 0, 0);
        gex_AD_OpBlocking_I32(ad32, NULL, 0, at(0, 4128), GEX_OP_INC, 0, 0, 0);
    }
    gex_NBI_Wait(GEX_EC_ALL, 0);
    uint32_t oldu32;
    gex_AD_OpBlocking_U32(adu32, &oldu32, 0, at(0, 4132), GEX_OP_FOR, 1u << me, 0, 0);
    gex_AD_OpBlocking_U64(adu64, &oldu64, 0, at(0, 4136), GEX_OP_FXOR, 1ull << (40 + me), 0, 0);
    gex_AD_OpBlocking_I64(ad64, &old64, 0, at(0, 4144), GEX_OP_FMIN, -(int64_t)me, 0, 0);
    gex_AD_OpBlocking_DBL(add, &oldd, 0, at(0, 4152), GEX_OP_FMAX, (double)me * 1.5, 0, 0);
    /* One winner of a compare-and-swap race. */
    gex_AD_OpBlocking_I32(ad32, &old32, 0, at(0, 4160), GEX_OP_FCAS, 0, (int32_t)me + 1, 0);
    int won = old32 == 0;
    int32_t winners = 0;
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &winners, &won, GEX_DT_I32, 4, 1, GEX_OP_ADD, 0, 0, 0));
    CHECK(winners == 1);
    BARRIER();
    int32_t v32; uint32_t vu32; int64_t v64; uint64_t vu64; float vf; double vd;
    gex_AD_OpBlocking_I32(ad32, &v32, 0, at(0, 4096), GEX_OP_GET, 0, 0, 0);
    CHECK(v32 == 2 * R * (int32_t)n);
    gex_AD_OpBlocking_U32(adu32, &vu32, 0, at(0, 4100), GEX_OP_GET, 0, 0, 0);
    CHECK(vu32 == 3u * R * n);
    gex_AD_OpBlocking_I64(ad64, &v64, 0, at(0, 4104), GEX_OP_GET, 0, 0, 0);
    CHECK(v64 == -5ll * R * n);
    gex_AD_OpBlocking_FLT(adf, &vf, 0, at(0, 4112), GEX_OP_GET, 0, 0, 0);
    CHECK(vf == 0.5f * R * n);
    gex_AD_OpBlocking_DBL(add, &vd, 0, at(0, 4120), GEX_OP_GET, 0, 0, 0);
    CHECK(vd == 0.25 * R * n);
    gex_AD_OpBlocking_I32(ad32, &v32, 0, at(0, 4128), GEX_OP_GET, 0, 0, 0);
    CHECK(v32 == R * (int32_t)n);
    gex_AD_OpBlocking_U32(adu32, &vu32, 0, at(0, 4132), GEX_OP_GET, 0, 0, 0);
    CHECK(vu32 == (1u << n) - 1);
    gex_AD_OpBlocking_U64(adu64, &vu64, 0, at(0, 4136), GEX_OP_GET, 0, 0, 0);
    CHECK(vu64 == ((1ull << n) - 1) << 40);
    gex_AD_OpBlocking_I64(ad64, &v64, 0, at(0, 4144), GEX_OP_GET, 0, 0, 0);
    CHECK(v64 == -(int64_t)(n - 1));
    gex_AD_OpBlocking_DBL(add, &vd, 0, at(0, 4152), GEX_OP_GET, 0, 0, 0);
    CHECK(vd == (double)(n - 1) * 1.5);
    BARRIER(); /* every rank has read the values above */
    gex_AD_OpBlocking_U64(adu64, NULL, 0, at(0, 4136), GEX_OP_CAS, ((1ull << n) - 1) << 40, 77, 0);
    gex_AD_OpBlocking_I64(ad64, &old64, me, at(me, 4168), GEX_OP_SWAP, 9, 0, 0);
    BARRIER();
    gex_AD_OpBlocking_U64(adu64, &vu64, 0, at(0, 4136), GEX_OP_GET, 0, 0, 0);
    CHECK(vu64 == 77);
    gex_AD_Destroy(ad32); gex_AD_Destroy(adu32); gex_AD_Destroy(ad64);
    gex_AD_Destroy(adu64); gex_AD_Destroy(adf); gex_AD_Destroy(add);

    /* VIS: a strided 3x4 patch of doubles into a 8x8 matrix at (2,3) of the peer; the
     * rest of the matrix stays 0xEE. */
    gex_Rank_t peer = (me + 1) % n, prev = (me + n - 1) % n;
    double *mat = (double *)(seg + 8192);
    memset(mat, 0xEE, 64 * 8);
    BARRIER();
    double patch[12];
    for (int i = 0; i < 12; i++) patch[i] = me * 100 + i;
    ptrdiff_t dstr[2] = {8, 64}, sstr[2] = {8, 32};
    size_t cnt[2] = {4, 3};
    CHECK(gex_VIS_StridedPutBlocking(tm, peer, at(peer, 8192 + (2 * 8 + 3) * 8), dstr, patch, sstr, 8, cnt, 2, 0) == 0);
    BARRIER();
    uint8_t ee[8]; memset(ee, 0xEE, 8);
    for (int r = 0; r < 8; r++)
        for (int c2 = 0; c2 < 8; c2++) {
            if (r >= 2 && r < 5 && c2 >= 3 && c2 < 7) CHECK(mat[r * 8 + c2] == prev * 100 + (r - 2) * 4 + (c2 - 3));
            else CHECK(memcmp(&mat[r * 8 + c2], ee, 8) == 0);
        }
    double back[12] = {0};
    gex_Event_Wait(gex_VIS_StridedGetNB(tm, back, sstr, peer, at(peer, 8192 + (2 * 8 + 3) * 8), dstr, 8, cnt, 2, 0));
    for (int i = 0; i < 12; i++) CHECK(back[i] == me * 100 + i);
    /* Indexed: 4 pieces of 16 bytes to scattered offsets; vector: 3 pieces of different
     * lengths from one buffer; holes stay 0xEE. */
    uint8_t *v = seg + 16384;
    memset(v, 0xEE, 1024);
    BARRIER();
    uint8_t src[64]; for (int i = 0; i < 64; i++) src[i] = (uint8_t)(i + me);
    void *dl[4], *sl[1] = {src};
    for (int i = 0; i < 4; i++) dl[i] = at(peer, 16384 + 100 * i);
    gex_VIS_IndexedPutNBI(tm, peer, 4, dl, 16, 1, sl, 64, 0);
    gex_NBI_Wait(GEX_EC_PUT, 0);
    gex_Memvec_t vd3[3] = {{at(peer, 16384 + 500), 5}, {at(peer, 16384 + 600), 1}, {at(peer, 16384 + 700), 10}};
    gex_Memvec_t vs1[1] = {{src, 16}};
    gex_Event_Wait(gex_VIS_VectorPutNB(tm, peer, 3, vd3, 1, vs1, 0));
    BARRIER();
    for (int i = 0; i < 1024; i++) {
        int want = 0xEE;
        if (i < 400 && i % 100 < 16) want = (uint8_t)(i / 100 * 16 + i % 100 + prev);
        else if (i >= 500 && i < 505) want = (uint8_t)(i - 500 + prev);
        else if (i == 600) want = (uint8_t)(5 + prev);
        else if (i >= 700 && i < 710) want = (uint8_t)(i - 700 + 6 + prev);
        CHECKF(v[i] == want, "vis byte %d: %d, want %d", i, v[i], want);
    }
    uint8_t g4[64] = {0};
    void *gl[1] = {g4};
    CHECK(gex_VIS_IndexedGetBlocking(tm, 1, gl, 64, peer, 4, dl, 16, 0) == 0);
    for (int i = 0; i < 64; i++) CHECK(g4[i] == (uint8_t)(i + me));
    gex_Memvec_t gv[2] = {{g4, 3}, {g4 + 3, 13}};
    gex_VIS_VectorGetBlocking(tm, 2, gv, peer, 3, vd3, 0);
    for (int i = 0; i < 16; i++) CHECK(g4[i] == (uint8_t)(i + me));
    BARRIER();
    if (me == 0) printf("ext: ok\n");
    gasnet_exit(0);
    return 1;
}
