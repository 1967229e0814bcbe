/* One-sided communication (MPI-3.1 chapter 11) on windows of MPI_Win_allocate and
 * MPI_Win_create: attributes, names, groups, info; Put/Get/Accumulate/Get_accumulate/
 * Fetch_and_op/Compare_and_swap under fence, lock/unlock, lock_all/unlock_all and the
 * flushes, every result checked; concurrency (all ranks accumulating into all ranks, a
 * Fetch_and_op counter whose fetched values form a permutation, a spin lock on
 * Compare_and_swap); bad input under MPI_ERRORS_RETURN. 2-4 ranks. */
#include "rmacount.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define N 64
#define ITERS 50

static int cls(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Window memory: N ints for the data tests, then a counter, a lock word and a shared
 * value (slots N, N+1, N+2), then 8 doubles, 4 shorts and 4 (double, int) pairs. */
struct extra {
    double d[8];
    short s[4];
    struct { double v; int i; } p[4];
};
#define XOFF (N + 4) /* int displacement of struct extra (16-byte aligned) */

static void basics(MPI_Win w, int *mem, int flavor) {
    int flag, *pi;
    void *pb;
    MPI_Aint *pa;
    CHECK(MPI_Win_get_attr(w, MPI_WIN_BASE, &pb, &flag) == MPI_SUCCESS && flag && pb == mem);
    CHECK(MPI_Win_get_attr(w, MPI_WIN_SIZE, &pa, &flag) == MPI_SUCCESS && flag);
    CHECK(*pa == (MPI_Aint)(XOFF * sizeof(int) + sizeof(struct extra)));
    CHECK(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &pi, &flag) == MPI_SUCCESS && flag && *pi == 4);
    CHECK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &pi, &flag) == MPI_SUCCESS && *pi == flavor);
    CHECK(MPI_Win_get_attr(w, MPI_WIN_MODEL, &pi, &flag) == MPI_SUCCESS && *pi == MPI_WIN_UNIFIED);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK(MPI_Win_set_name(w, "rma-test") == MPI_SUCCESS);
    CHECK(MPI_Win_get_name(w, name, &len) == MPI_SUCCESS && strcmp(name, "rma-test") == 0);
    MPI_Group g, wg;
    int res;
    CHECK(MPI_Win_get_group(w, &g) == MPI_SUCCESS);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &res);
    CHECK(res == MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Info info;
    CHECK(MPI_Win_get_info(w, &info) == MPI_SUCCESS);
    /* RMA_TEST_PATH: the path the test runner expects ("direct" or "messages") */
    const char *want = getenv("RMA_TEST_PATH");
    char path[32] = "";
    CHECK(MPI_Info_get(info, "mpi_lite_rma_path", sizeof path - 1, path, &flag) == MPI_SUCCESS && flag);
    CHECK(want == NULL || strcmp(want, path) == 0);
    /* RMA_TEST_TRANSFERS: "1" if MPI_Win_allocate windows must take puts and gets by the
     * driver's transfers (a job on several hosts), "0" if none may; windows of the
     * program's memory never do. */
    const char *xfer = getenv("RMA_TEST_TRANSFERS");
    CHECK(MPI_Info_get(info, "mpi_lite_rma_transfers", sizeof path - 1, path, &flag) == MPI_SUCCESS && flag);
    int by_xfer = xfer != NULL && strcmp(xfer, "1") == 0 && flavor == MPI_WIN_FLAVOR_ALLOCATE;
    CHECK(xfer == NULL || strcmp(path, by_xfer ? "true" : "false") == 0);
    /* The §11.2.1 hints in effect: defaults, and a set_info changes only its keys. */
    char hv[64] = "";
    CHECK(MPI_Info_get(info, "accumulate_ordering", sizeof hv - 1, hv, &flag) == MPI_SUCCESS && flag);
    CHECK(strcmp(hv, "rar,raw,war,waw") == 0);
    MPI_Info_free(&info);
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ops", "same_op");
    CHECK(MPI_Win_set_info(w, info) == MPI_SUCCESS);
    MPI_Info_free(&info);
    CHECK(MPI_Win_get_info(w, &info) == MPI_SUCCESS);
    CHECK(MPI_Info_get(info, "accumulate_ops", sizeof hv - 1, hv, &flag) == MPI_SUCCESS && flag && strcmp(hv, "same_op") == 0);
    CHECK(MPI_Info_get(info, "no_locks", sizeof hv - 1, hv, &flag) == MPI_SUCCESS && flag && strcmp(hv, "false") == 0);
    MPI_Info_free(&info);
    MPI_Errhandler eh;
    CHECK(MPI_Win_get_errhandler(w, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_ARE_FATAL);
    CHECK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN) == MPI_SUCCESS);
    int kv, *got, val = 42 + rank;
    CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv, NULL) == MPI_SUCCESS);
    CHECK(MPI_Win_set_attr(w, kv, &val) == MPI_SUCCESS);
    CHECK(MPI_Win_get_attr(w, kv, &got, &flag) == MPI_SUCCESS && flag && got == &val);
    CHECK(MPI_Win_delete_attr(w, kv) == MPI_SUCCESS);
    CHECK(MPI_Win_get_attr(w, kv, &got, &flag) == MPI_SUCCESS && !flag);
    CHECK(MPI_Win_free_keyval(&kv) == MPI_SUCCESS);
}

static void fence_ops(MPI_Win w, int *mem) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++) mem[i] = -1;
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    /* every rank writes its rank into slot `rank` of every rank, and a block to the right */
    for (int t = 0; t < size; t++)
        CHECK(MPI_Put(&rank, 1, MPI_INT, t, rank, 1, MPI_INT, w) == MPI_SUCCESS);
    int blk[8];
    for (int i = 0; i < 8; i++) blk[i] = 1000 * rank + i;
    CHECK(MPI_Put(blk, 8, MPI_INT, right, 8, 8, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    for (int t = 0; t < size; t++) CHECK(mem[t] == t);
    for (int i = 0; i < 8; i++) CHECK(mem[8 + i] == 1000 * left + i);
    /* get the right neighbour's block (written by us) */
    int got[8] = {0};
    CHECK(MPI_Get(got, 8, MPI_INT, right, 8, 8, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    for (int i = 0; i < 8; i++) CHECK(got[i] == 1000 * rank + i);
    /* a strided target (a vector type): every 2nd int of slots 16..31 */
    MPI_Datatype vec;
    MPI_Type_vector(8, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int i = 16; i < 32; i++) mem[i] = -7;
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(blk, 8, MPI_INT, right, 16, 1, vec, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    for (int i = 0; i < 8; i++) CHECK(mem[16 + 2 * i] == 1000 * left + i && mem[17 + 2 * i] == -7);
    MPI_Type_free(&vec);
    /* all ranks accumulate into all ranks: SUM of (rank+1) into slots 32..39 */
    for (int i = 32; i < 40; i++) mem[i] = 0;
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    int add[8];
    for (int i = 0; i < 8; i++) add[i] = rank + 1 + i;
    for (int t = 0; t < size; t++)
        CHECK(MPI_Accumulate(add, 8, MPI_INT, t, 32, 8, MPI_INT, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    for (int i = 0; i < 8; i++) CHECK(mem[32 + i] == size * (size + 1) / 2 + size * i);
    /* MAX and REPLACE */
    CHECK(MPI_Accumulate(&rank, 1, MPI_INT, 0, 40, 1, MPI_INT, MPI_MAX, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    if (rank == 0) CHECK(mem[40] == size - 1);
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w) == MPI_SUCCESS);
}

static void typed_accumulates(MPI_Win w, int *mem) {
    struct extra *x = (struct extra *)(mem + XOFF);
    for (int i = 0; i < 8; i++) x->d[i] = 1.5;
    for (int i = 0; i < 4; i++) { x->s[i] = 10; x->p[i].v = 5.0; x->p[i].i = 99; }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    double dv[8];
    for (int i = 0; i < 8; i++) dv[i] = rank;
    short sv[4] = {1, 2, 3, 4};
    struct { double v; int i; } pv[4];
    for (int i = 0; i < 4; i++) { pv[i].v = (double)(rank % 2 ? rank : -rank); pv[i].i = rank; }
    MPI_Aint dd = XOFF, sd = XOFF + (MPI_Aint)(offsetof(struct extra, s) / 4),
             pd = XOFF + (MPI_Aint)(offsetof(struct extra, p) / 4);
    for (int t = 0; t < size; t++) {
        CHECK(MPI_Accumulate(dv, 8, MPI_DOUBLE, t, dd, 8, MPI_DOUBLE, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(sv, 4, MPI_SHORT, t, sd, 4, MPI_SHORT, MPI_PROD, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(pv, 4, MPI_DOUBLE_INT, t, pd, 4, MPI_DOUBLE_INT, MPI_MINLOC, w) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_flush_all(w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    double sum = 1.5;
    for (int r = 0; r < size; r++) sum += r;
    int minr = 0; /* the smallest of 0, -2, 1, 3 ... */
    double minv = 0;
    for (int r = 0; r < size; r++) {
        double v = r % 2 ? r : -r;
        if (v < minv) { minv = v; minr = r; }
    }
    for (int i = 0; i < 8; i++) CHECK(x->d[i] == sum);
    for (int i = 0; i < 4; i++) {
        int p = 10;
        for (int r = 0; r < size; r++) p *= (i + 1);
        CHECK(x->s[i] == (short)p);
        CHECK(x->p[i].v == minv && x->p[i].i == minr);
    }
    /* Get_accumulate: NO_OP reads, REPLACE swaps, SUM fetches and adds */
    MPI_Barrier(MPI_COMM_WORLD);
    int right = (rank + 1) % size;
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w) == MPI_SUCCESS);
    double old[8], nv[8];
    for (int i = 0; i < 8; i++) nv[i] = 100 + i;
    CHECK(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, old, 8, MPI_DOUBLE, right, dd, 8, MPI_DOUBLE, MPI_NO_OP, w) == MPI_SUCCESS);
    for (int i = 0; i < 8; i++) CHECK(old[i] == sum);
    CHECK(MPI_Get_accumulate(nv, 8, MPI_DOUBLE, old, 8, MPI_DOUBLE, right, dd, 8, MPI_DOUBLE, MPI_REPLACE, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, w) == MPI_SUCCESS);
    CHECK(MPI_Get_accumulate(nv, 8, MPI_DOUBLE, old, 8, MPI_DOUBLE, right, dd, 8, MPI_DOUBLE, MPI_SUM, w) == MPI_SUCCESS);
    for (int i = 0; i < 8; i++) CHECK(old[i] == 100 + i);
    CHECK(MPI_Win_unlock(right, w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++) CHECK(x->d[i] == 2 * (100 + i));
}

static void passive(MPI_Win w, int *mem) {
    /* Fetch_and_op counter on rank 0: the fetched values are a permutation. */
    mem[N] = 0;
    mem[N + 1] = 0;
    mem[N + 2] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    int mine[ITERS], one = 1;
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    for (int i = 0; i < ITERS; i++) {
        CHECK(MPI_Fetch_and_op(&one, &mine[i], MPI_INT, 0, N, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    int *all = rank == 0 ? calloc((size_t)(ITERS * size), sizeof(int)) : NULL;
    MPI_Gather(mine, ITERS, MPI_INT, all, ITERS, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char *seen = calloc((size_t)(ITERS * size), 1);
        for (int i = 0; i < ITERS * size; i++) {
            CHECK(all[i] >= 0 && all[i] < ITERS * size && !seen[all[i]]);
            seen[all[i]] = 1;
        }
        CHECK(mem[N] == ITERS * size);
        free(seen);
        free(all);
    }
    /* A spin lock on Compare_and_swap guards a read-modify-write by Get/Put. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    for (int i = 0; i < ITERS; i++) {
        int zero = 0, me = rank + 1, prev = -1;
        do {
            CHECK(MPI_Compare_and_swap(&me, &zero, &prev, MPI_INT, 0, N + 1, w) == MPI_SUCCESS);
            CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
        } while (prev != 0);
        int v;
        CHECK(MPI_Get(&v, 1, MPI_INT, 0, N + 2, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
        v++;
        CHECK(MPI_Put(&v, 1, MPI_INT, 0, N + 2, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
        CHECK(MPI_Compare_and_swap(&zero, &me, &prev, MPI_INT, 0, N + 1, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush_local(0, w) == MPI_SUCCESS);
        CHECK(prev == me);
    }
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(mem[N + 2] == ITERS * size && mem[N + 1] == 0);
    /* Exclusive locks: each rank in turn adds to every rank's slot 41 by get + put. */
    mem[41] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int t = 0; t < size; t++) {
        int v;
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&v, 1, MPI_INT, t, 41, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(t, w) == MPI_SUCCESS);
        v += rank + 1;
        CHECK(MPI_Put(&v, 1, MPI_INT, t, 41, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(t, w) == MPI_SUCCESS);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[41] == size * (size + 1) / 2);
    /* Shared lock and Win_sync. */
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Win_sync(w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(rank, w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void bad_input(MPI_Win w) {
    int v = 0, rc;
    /* outside an epoch */
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_unlock(0, w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_unlock_all(w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_flush(0, w)) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_SUCCESS);
    /* past the window, before it, an invalid rank, a user operation */
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, 0, XOFF + 100, 1, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Get(&v, 2, MPI_INT, 0, XOFF + (MPI_Aint)(sizeof(struct extra) / 4) - 1, 2, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, 0, -1, 1, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, w)) == MPI_ERR_RANK);
    CHECK(cls(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_OP_NULL, w)) == MPI_ERR_OP);
    CHECK(cls(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w)) == MPI_ERR_RMA_SYNC);
    /* MPI_PROC_NULL is a no-op */
    CHECK(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
    rc = MPI_Win_call_errhandler(w, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS);
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_WIN_NULL)) == MPI_ERR_WIN);
}

/* RMA_TEST_TRANSFERS=1, MPI_Win_allocate: a put and a get to the next rank go by the
 * driver's transfers, sending no message (the fences do), and the put lands. */
static void transfers(MPI_Win w, int *mem, int flavor) {
    const char *xfer = getenv("RMA_TEST_TRANSFERS");
    if (!xfer || strcmp(xfer, "1") != 0 || flavor != MPI_WIN_FLAVOR_ALLOCATE) return;
    int m, v = 4242 + rank, back = -1, next = (rank + 1) % size;
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    long c0 = rma_messages(w, &m);
    CHECK(MPI_Put(&v, 1, MPI_INT, next, 0, 1, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Get(&back, 1, MPI_INT, next, 1, 1, MPI_INT, w) == MPI_SUCCESS);
    CHECK(rma_messages(w, &m) == c0);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    CHECK(mem[0] == 4242 + (rank + size - 1) % size);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
}

static void run(MPI_Win w, int *mem, int flavor) {
    basics(w, mem, flavor);
    fence_ops(w, mem);
    typed_accumulates(w, mem);
    passive(w, mem);
    bad_input(w);
    transfers(w, mem, flavor);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Aint bytes = (MPI_Aint)(XOFF * sizeof(int) + sizeof(struct extra));

    int *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    run(w, mem, MPI_WIN_FLAVOR_ALLOCATE);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS && w == MPI_WIN_NULL);

    mem = aligned_alloc(64, (size_t)bytes + 64);
    CHECK(MPI_Win_create(mem, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &w) == MPI_SUCCESS);
    run(w, mem, MPI_WIN_FLAVOR_CREATE);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    free(mem);

    /* A window on a sub-communicator (the odd ranks and the even ones). */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    CHECK(MPI_Win_allocate(64, 8, MPI_INFO_NULL, half, &mem, &w) == MPI_SUCCESS);
    long lv = 1000 + rank, lg = 0;
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(&lv, 1, MPI_LONG, (hr + 1) % hs, 1, 1, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    CHECK(MPI_Get(&lg, 1, MPI_LONG, hr, 1, 1, MPI_LONG, w) == MPI_SUCCESS);
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    int from = (hr + hs - 1) % hs; /* its world rank: from * 2 + rank % 2 */
    CHECK(lg == 1000 + from * 2 + rank % 2);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    MPI_Comm_free(&half);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma: ok\n");
    MPI_Finalize();
    return 0;
}
