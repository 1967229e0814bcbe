/* The direct path's short cuts (mpi-lite/src/win/direct.rs; on the message path the same
 * calls take the general path, and the program checks the same results):
 *  - every single-instruction accumulate (SUM, BAND, BOR, BXOR, MAX, MIN, REPLACE,
 *    NO_OP on signed and unsigned 4- and 8-byte integers, SUM on float and double) and
 *    compare-and-swap, results and target values checked against local arithmetic;
 *  - atomicity between the short cut and the general path on one element: every rank
 *    adds to rank 0's counters with Fetch_and_op (short cut), Accumulate with a derived
 *    type (general path, its compare-and-swap loop) and MPI_PROD-free Get_accumulate
 *    through a contiguous derived type, concurrently; the sums must be exact;
 *  - what must fall back and be reported as before: a misaligned element (general path,
 *    the accumulate lock), a range error, operations and flushes outside an epoch after
 *    unlock / unlock_all / a NOSUCCEED fence (the epoch bits cleared), MPI_PROC_NULL;
 *  - the cached window handle: a window freed and another created (reusing its handle)
 *    receives the puts, the freed one none;
 *  - the flush's ordering (direct.rs, "the flush's barrier"): ranks 0 and 1 each put a
 *    word, flush, then get the other's word (store-buffer litmus, thousands of rounds):
 *    MPI forbids both reading the old value, which happens in ~5% of the rounds without
 *    the barrier the get owes the flush.
 * 2-4 ranks. */
#include "check.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 200

static int cls(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Window layout (bytes): 0 int32 i, 8 uint32 u, 16 int64 l, 24 uint64 ul, 32 float f,
 * 40 double d, 48.. counters (64 long, 72 double, 80 int), 96.. misaligned long at 97. */
struct cell {
    int32_t i;
    int32_t _p0;
    uint32_t u;
    int32_t _p1;
    int64_t l;
    uint64_t ul;
    float f;
    int32_t _p2;
    double d;
};

static void ops(MPI_Win w, char *mem) {
    int t = (rank + 1) % size;
    MPI_Op bops[] = {MPI_SUM, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAX, MPI_MIN, MPI_REPLACE, MPI_NO_OP};
    int32_t iv[] = {-7, 5, 0x7fffffff, -1};
    for (int k = 0; k < 8; k++) {
        for (int a = 0; a < 4; a++) {
            int32_t start = iv[a], x = iv[(a + 1) % 4], old = 0;
            int64_t ls = (int64_t)start * 1000003, lx = (int64_t)x * 77, lold = 0;
            uint32_t us = (uint32_t)start, ux = (uint32_t)x, uold = 0;
            uint64_t uls = (uint64_t)ls, ulx = (uint64_t)lx, ulold = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            struct cell *c = (struct cell *)mem;
            c->i = start;
            c->u = us;
            c->l = ls;
            c->ul = uls;
            MPI_Win_sync(w);
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w) == MPI_SUCCESS);
            CHECK(MPI_Fetch_and_op(&x, &old, MPI_INT32_T, t, 0, bops[k], w) == MPI_SUCCESS);
            CHECK(MPI_Fetch_and_op(&ux, &uold, MPI_UNSIGNED, t, 8, bops[k], w) == MPI_SUCCESS);
            CHECK(MPI_Get_accumulate(&lx, 1, MPI_LONG, &lold, 1, MPI_LONG, t, 16, 1, MPI_LONG,
                                     bops[k], w) == MPI_SUCCESS);
            CHECK(MPI_Fetch_and_op(&ulx, &ulold, MPI_UINT64_T, t, 24, bops[k], w) == MPI_SUCCESS);
            CHECK(MPI_Win_unlock(t, w) == MPI_SUCCESS);
            CHECK(old == start && uold == us && lold == ls && ulold == uls);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Win_sync(w);
            int32_t ei = start;
            uint32_t eu = us;
            int64_t el = ls;
            uint64_t eul = uls;
            /* x and friends of the origin that targets this rank: the same values */
            switch (k) {
            case 0: ei = (int32_t)((uint32_t)start + (uint32_t)x); eu = us + ux; el = ls + lx; eul = uls + ulx; break;
            case 1: ei = start & x; eu = us & ux; el = ls & lx; eul = uls & ulx; break;
            case 2: ei = start | x; eu = us | ux; el = ls | lx; eul = uls | ulx; break;
            case 3: ei = start ^ x; eu = us ^ ux; el = ls ^ lx; eul = uls ^ ulx; break;
            case 4: ei = start > x ? start : x; eu = us > ux ? us : ux; el = ls > lx ? ls : lx; eul = uls > ulx ? uls : ulx; break;
            case 5: ei = start < x ? start : x; eu = us < ux ? us : ux; el = ls < lx ? ls : lx; eul = uls < ulx ? uls : ulx; break;
            case 6: ei = x; eu = ux; el = lx; eul = ulx; break;
            default: break;
            }
            CHECK(c->i == ei && c->u == eu && c->l == el && c->ul == eul);
        }
    }
    /* floating-point sums and compare-and-swap (bits compared) */
    MPI_Barrier(MPI_COMM_WORLD);
    struct cell *c = (struct cell *)mem;
    c->f = 1.5f;
    c->d = 2.25;
    c->l = 10;
    c->i = 3;
    MPI_Win_sync(w);
    MPI_Barrier(MPI_COMM_WORLD);
    float fx = 0.25f, fold = 0;
    double dx = 0.5, dold = 0, dcmp = 2.75, dnew = -1.0;
    int64_t lnew = 99, lcmp = 11, lold = 0;
    int32_t inew = 7, icmp = 3, iold = 0;
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Fetch_and_op(&fx, &fold, MPI_FLOAT, t, 32, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Accumulate(&dx, 1, MPI_DOUBLE, t, 40, 1, MPI_DOUBLE, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Compare_and_swap(&dnew, &dcmp, &dold, MPI_DOUBLE, t, 40, w) == MPI_SUCCESS);
    CHECK(MPI_Compare_and_swap(&lnew, &lcmp, &lold, MPI_LONG, t, 16, w) == MPI_SUCCESS);
    CHECK(lold == 10); /* not equal: unchanged */
    CHECK(MPI_Compare_and_swap(&inew, &icmp, &iold, MPI_INT, t, 0, w) == MPI_SUCCESS);
    CHECK(iold == 3);
    CHECK(MPI_Win_unlock(t, w) == MPI_SUCCESS);
    CHECK(fold == 1.5f && dold == 2.75);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(w);
    CHECK(c->f == 1.75f && c->d == -1.0 && c->l == 10 && c->i == 7);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Every rank adds to rank 0's counters through the short cut and the general path at
 * once; the totals are exact only if both are atomic against each other. */
static void mixed(MPI_Win w, char *mem) {
    MPI_Datatype one_long, one_double, one_int;
    MPI_Type_contiguous(1, MPI_LONG, &one_long);
    MPI_Type_contiguous(1, MPI_DOUBLE, &one_double);
    MPI_Type_contiguous(1, MPI_INT, &one_int);
    MPI_Type_commit(&one_long);
    MPI_Type_commit(&one_double);
    MPI_Type_commit(&one_int);
    if (rank == 0) memset(mem + 64, 0, 32);
    MPI_Win_sync(w);
    MPI_Barrier(MPI_COMM_WORLD);
    long one = 1, got;
    double h = 0.5;
    int ione = 1, iold;
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    for (int i = 0; i < ITERS; i++) {
        CHECK(MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, 64, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&one, 1, one_long, 0, 64, 1, one_long, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&h, 1, MPI_DOUBLE, 0, 72, 1, MPI_DOUBLE, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&h, 1, one_double, 0, 72, 1, one_double, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Fetch_and_op(&ione, &iold, MPI_INT, 0, 80, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Get_accumulate(&ione, 1, one_int, &iold, 1, one_int, 0, 80, 1, one_int,
                                 MPI_SUM, w) == MPI_SUCCESS);
        if (i % 16 == 0) CHECK(MPI_Win_flush_all(w) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_sync(w);
        CHECK(*(long *)(mem + 64) == 2L * ITERS * size);
        CHECK(*(double *)(mem + 72) == 1.0 * ITERS * size);
        CHECK(*(int *)(mem + 80) == 2 * ITERS * size);
    }
    MPI_Type_free(&one_long);
    MPI_Type_free(&one_double);
    MPI_Type_free(&one_int);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void fallbacks(MPI_Win w, char *mem) {
    int t = (rank + 1) % size;
    long v = 5, r = 0;
    char bytes[16] = "0123456789abcde";
    /* outside any epoch, before and after each kind */
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_flush(t, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_flush_all(w)) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush_local_all(w) == MPI_SUCCESS);
    /* only t is locked */
    if (size > 2)
        CHECK(cls(MPI_Put(&v, 1, MPI_LONG, (t + 1) % size, 0, 1, MPI_LONG, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 4096, 1, MPI_LONG, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Get(&r, 1, MPI_LONG, t, -1, 1, MPI_LONG, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, size, 0, 1, MPI_LONG, w)) == MPI_ERR_RANK);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 2, MPI_INT, w)) == MPI_SUCCESS);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_INT, w)) != MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_LONG, MPI_PROC_NULL, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(MPI_PROC_NULL, w) == MPI_SUCCESS);
    /* a misaligned long: not a CPU atomic, the general path's accumulate lock */
    CHECK(MPI_Put(bytes, 16, MPI_BYTE, t, 96, 16, MPI_BYTE, w) == MPI_SUCCESS);
    long m = 3;
    CHECK(MPI_Fetch_and_op(&m, &r, MPI_LONG, t, 97, MPI_SUM, w) == MPI_SUCCESS);
    long want;
    memcpy(&want, bytes + 1, 8);
    CHECK(r == want);
    CHECK(MPI_Get(&r, 1, MPI_LONG, t, 97, 1, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush_local(t, w) == MPI_SUCCESS);
    CHECK(r == want + 3);
    CHECK(MPI_Win_unlock(t, w) == MPI_SUCCESS);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Get(&r, 1, MPI_LONG, t, 0, 1, MPI_LONG, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Fetch_and_op(&v, &r, MPI_LONG, t, 0, MPI_SUM, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_flush(t, w)) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(t, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_flush_all(w)) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w) == MPI_SUCCESS);
    CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, w)) == MPI_ERR_RMA_SYNC);
    CHECK(*(long *)mem == 5);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* put x; flush; get y here against put y; flush; get x on the other rank, both on the last
 * rank's window: at least one get sees the other's put (the flush completed it). */
static void ordering(MPI_Win w) {
    const char *path = getenv("RMA_TEST_PATH");
    /* many rounds where both ranks run at once (2 ranks here); oversubscribed or on the
     * message path a few (each round waits for scheduling or messages) */
    int direct = path && strcmp(path, "direct") == 0;
    int rounds = direct ? (size == 2 ? 20000 : 500) : 50, both = 0, t = size - 1;
    long one, got = -1;
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    for (int i = 0; i < rounds; i++) {
        MPI_Aint slot = 2048 + (i % 64) * 16;
        int seen = 1;
        one = i + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < 2) {
            CHECK(MPI_Put(&one, 1, MPI_LONG, t, slot + 8 * rank, 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Win_flush(t, w) == MPI_SUCCESS);
            CHECK(MPI_Get(&got, 1, MPI_LONG, t, slot + 8 * (1 - rank), 1, MPI_LONG, w) == MPI_SUCCESS);
            CHECK(MPI_Win_flush(t, w) == MPI_SUCCESS);
            seen = got == i + 1;
        }
        int any = 0;
        MPI_Allreduce(&seen, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        both += !any;
    }
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    if (both) fprintf(stderr, "rmadirect: %d of %d rounds both gets read the old value\n", both, rounds);
    CHECK(both == 0);
}

/* A freed window's handle reused by the next: puts reach the new window only. */
static void handles(void) {
    int t = (rank + 1) % size;
    long *a, *b, v = 1000 + rank;
    MPI_Win wa, wb;
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &a, &wa);
    MPI_Win_set_errhandler(wa, MPI_ERRORS_RETURN);
    a[0] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, wa) == MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, wa) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(t, wa) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(a[0] == 1000 + (rank + size - 1) % size);
    MPI_Win old = wa;
    CHECK(MPI_Win_free(&wa) == MPI_SUCCESS);
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &b, &wb);
    MPI_Win_set_errhandler(wb, MPI_ERRORS_RETURN);
    b[1] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, wb) == MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_LONG, t, 1, 1, MPI_LONG, wb) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(t, wb) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(b[1] == 1000 + (rank + size - 1) % size);
    if (old != wb) /* the freed handle is no window any more */
        CHECK(cls(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, old)) == MPI_ERR_WIN);
    CHECK(MPI_Win_free(&wb) == MPI_SUCCESS);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    memset(mem, 0, 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    ops(w, mem);
    mixed(w, mem);
    fallbacks(w, mem);
    ordering(w);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    handles();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rmadirect: rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
