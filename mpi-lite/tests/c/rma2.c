/* One-sided communication, second part: post/start/complete/wait and MPI_Win_test, the
 * request-based operations (MPI_Rput, Rget, Raccumulate, Rget_accumulate), derived origin
 * types, dynamic windows (attach/detach, every address validated by the target),
 * MPI_Win_allocate_shared + MPI_Win_shared_query (load/store of the neighbours'
 * memory). 2-4 ranks; RMA_TEST_NO_SHARED=1: the driver cannot share memory, so
 * MPI_Win_allocate_shared must fail with MPI_ERR_RMA_SHARED. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

static int cls(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static MPI_Group one(int r) {
    MPI_Group w, g;
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    MPI_Group_incl(w, 1, &r, &g);
    MPI_Group_free(&w);
    return g;
}

static void pscw(MPI_Win w, int *mem, int use_test) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group to = one(right), from = one(left);
    for (int round = 0; round < 3; round++) {
        mem[0] = -1;
        mem[1] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_post(from, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Win_start(to, 0, w) == MPI_SUCCESS);
        int v[2] = {rank, round};
        CHECK(MPI_Put(v, 2, MPI_INT, right, 0, 2, MPI_INT, w) == MPI_SUCCESS);
        /* outside the start group: not in the epoch */
        if (size > 2)
            CHECK(cls(MPI_Put(v, 1, MPI_INT, left, 4, 1, MPI_INT, w)) == MPI_ERR_RMA_SYNC);
        CHECK(MPI_Win_complete(w) == MPI_SUCCESS);
        if (use_test) {
            int flag = 0;
            while (!flag) CHECK(MPI_Win_test(w, &flag) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Win_wait(w) == MPI_SUCCESS);
        }
        CHECK(mem[0] == left && mem[1] == round);
    }
    CHECK(cls(MPI_Win_complete(w)) == MPI_ERR_RMA_SYNC);
    CHECK(cls(MPI_Win_wait(w)) == MPI_ERR_RMA_SYNC);
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void requests(MPI_Win w, int *mem) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request r[4];
    int v = 0;
    CHECK(MPI_Win_fence(0, w) == MPI_SUCCESS);
    CHECK(cls(MPI_Rput(&v, 1, MPI_INT, right, 0, 1, MPI_INT, w, &r[0])) == MPI_ERR_RMA_SYNC);
    CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w) == MPI_SUCCESS);
    for (int i = 0; i < 16; i++) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    int put[4] = {rank, rank + 1, rank + 2, rank + 3}, got[4] = {0}, one_ = 5, old = -1;
    CHECK(MPI_Rput(put, 4, MPI_INT, right, 0, 4, MPI_INT, w, &r[0]) == MPI_SUCCESS);
    CHECK(MPI_Raccumulate(&one_, 1, MPI_INT, right, 8, 1, MPI_INT, MPI_SUM, w, &r[1]) == MPI_SUCCESS);
    CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, w) == MPI_SUCCESS);
    CHECK(MPI_Rget(got, 4, MPI_INT, right, 0, 4, MPI_INT, w, &r[2]) == MPI_SUCCESS);
    CHECK(MPI_Rget_accumulate(&one_, 1, MPI_INT, &old, 1, MPI_INT, right, 8, 1, MPI_INT, MPI_SUM, w, &r[3]) == MPI_SUCCESS);
    CHECK(MPI_Wait(&r[2], MPI_STATUS_IGNORE) == MPI_SUCCESS && r[2] == MPI_REQUEST_NULL);
    int flag = 0;
    while (!flag) CHECK(MPI_Test(&r[3], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(got[i] == rank + i);
    CHECK(old == 5);
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) CHECK(mem[i] == left + i);
    CHECK(mem[8] == 10);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void derived_origin(MPI_Win w, int *mem) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Datatype col, pair;
    MPI_Type_vector(4, 1, 3, MPI_INT, &col); /* every third int */
    MPI_Type_commit(&col);
    int blens[2] = {1, 1};
    MPI_Aint disps[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, blens, disps, types, &pair); /* ints at 0 and 8 */
    MPI_Type_commit(&pair);
    int src[12], dst[12];
    for (int i = 0; i < 12; i++) { src[i] = 100 * rank + i; dst[i] = -1; }
    for (int i = 0; i < 16; i++) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w) == MPI_SUCCESS);
    /* origin strided -> target contiguous; then a struct target */
    CHECK(MPI_Put(src, 1, col, right, 0, 4, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Put(src, 2, MPI_INT, right, 8, 1, pair, w) == MPI_SUCCESS);
    CHECK(MPI_Accumulate(src, 1, col, right, 12, 4, MPI_INT, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, w) == MPI_SUCCESS);
    /* contiguous target -> strided origin */
    CHECK(MPI_Get(dst, 1, col, right, 0, 4, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(right, w) == MPI_SUCCESS);
    for (int i = 0; i < 12; i++) CHECK(dst[i] == (i % 3 == 0 ? 100 * rank + i : -1));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) CHECK(mem[i] == 100 * left + 3 * i);
    CHECK(mem[8] == 100 * left && mem[9] == 0 && mem[10] == 100 * left + 1);
    for (int i = 0; i < 4; i++) CHECK(mem[12 + i] == 100 * left + 3 * i);
    MPI_Type_free(&col);
    MPI_Type_free(&pair);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void dynamic(void) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size, v = 0;
    MPI_Win w;
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    int flag, *flavor;
    CHECK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag) == MPI_SUCCESS && *flavor == MPI_WIN_FLAVOR_DYNAMIC);
    int *buf = calloc(16, sizeof(int)), *other = calloc(4, sizeof(int));
    CHECK(MPI_Win_attach(w, buf, 16 * sizeof(int)) == MPI_SUCCESS);
    CHECK(MPI_Win_attach(w, other, 4 * sizeof(int)) == MPI_SUCCESS);
    MPI_Aint mine[2], addr[2 * 4];
    MPI_Get_address(buf, &mine[0]);
    MPI_Get_address(other, &mine[1]);
    MPI_Allgather(mine, 2, MPI_AINT, addr, 2, MPI_AINT, MPI_COMM_WORLD);
    MPI_Aint rb = addr[2 * right], ro = addr[2 * right + 1];
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    int vals[4] = {rank, rank + 10, rank + 20, rank + 30}, got[4] = {0}, add = 1, old = -1;
    CHECK(MPI_Put(vals, 4, MPI_INT, right, rb + 4, 4, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Accumulate(&add, 1, MPI_INT, right, ro, 1, MPI_INT, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, w) == MPI_SUCCESS);
    CHECK(MPI_Get(got, 4, MPI_INT, right, rb + 4, 4, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Fetch_and_op(&add, &old, MPI_INT, right, ro, MPI_SUM, w) == MPI_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(got[i] == rank + 10 * i);
    CHECK(old == 1);
    /* the target validates every address: past the region, between regions */
    CHECK(cls(MPI_Put(vals, 4, MPI_INT, right, rb + 14 * 4, 4, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Get(got, 1, MPI_INT, right, 8, 1, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(cls(MPI_Accumulate(&add, 1, MPI_INT, right, ro + 16, 1, MPI_INT, MPI_SUM, w)) == MPI_ERR_RMA_RANGE);
    /* no bytes: no memory accessed, valid at any address (OSU's size 0 on a 0-byte region) */
    CHECK(MPI_Put(vals, 0, MPI_INT, right, 8, 0, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Get_accumulate(vals, 0, MPI_CHAR, got, 0, MPI_CHAR, right, ro + 16, 0, MPI_CHAR, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Get(got, 0, MPI_INT, right, rb + 64, 0, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_flush(right, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) CHECK(buf[1 + i] == left + 10 * i);
    CHECK(other[0] == 2);
    /* detached: the address is refused */
    CHECK(MPI_Win_detach(w, other) == MPI_SUCCESS);
    CHECK(cls(MPI_Win_detach(w, other)) == MPI_ERR_RMA_ATTACH);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w) == MPI_SUCCESS);
    CHECK(cls(MPI_Put(&v, 1, MPI_INT, right, ro, 1, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(MPI_Win_unlock(right, w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_detach(w, buf) == MPI_SUCCESS);
    /* Two attachments side by side are one span: an operation may cross from one into
     * the next (MPICH's win_dynamic_rma_flush_get); past the second is still refused. */
    static int two[16];
    CHECK(MPI_Win_attach(w, &two[0], 8 * sizeof(int)) == MPI_SUCCESS);
    CHECK(MPI_Win_attach(w, &two[8], 8 * sizeof(int)) == MPI_SUCCESS);
    MPI_Aint t0;
    MPI_Get_address(&two[0], &t0);
    MPI_Allgather(&t0, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
    int span[12];
    for (int i = 0; i < 12; i++) span[i] = rank * 100 + i;
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(span, 12, MPI_INT, right, addr[right] + 2 * sizeof(int), 12, MPI_INT, w) == MPI_SUCCESS);
    CHECK(cls(MPI_Put(span, 12, MPI_INT, right, addr[right] + 8 * sizeof(int), 12, MPI_INT, w)) == MPI_ERR_RMA_RANGE);
    CHECK(MPI_Win_unlock(right, w) == MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 12; i++) CHECK(two[2 + i] == left * 100 + i);
    CHECK(MPI_Win_detach(w, &two[0]) == MPI_SUCCESS && MPI_Win_detach(w, &two[8]) == MPI_SUCCESS);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    free(buf);
    free(other);
}

static void shared(void) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    int nr, ns;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);
    long *mine;
    MPI_Win w;
    int rc = MPI_Win_allocate_shared((MPI_Aint)(nr + 1) * 8, 8, MPI_INFO_NULL, node, &mine, &w);
    const char *no = getenv("RMA_TEST_NO_SHARED");
    if (no && no[0] == '1') {
        CHECK(cls(rc) == MPI_ERR_RMA_SHARED);
        MPI_Comm_free(&node);
        return;
    }
    CHECK(rc == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    for (int i = 0; i <= nr; i++) mine[i] = 1000 * nr + i;
    CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
    CHECK(MPI_Win_sync(w) == MPI_SUCCESS);
    MPI_Barrier(node);
    CHECK(MPI_Win_sync(w) == MPI_SUCCESS);
    char *prev_end = NULL;
    for (int r = 0; r < ns; r++) {
        MPI_Aint sz;
        int du;
        long *p;
        CHECK(MPI_Win_shared_query(w, r, &sz, &du, &p) == MPI_SUCCESS);
        CHECK(sz == (MPI_Aint)(r + 1) * 8 && du == 8);
        if (prev_end) CHECK((char *)p == prev_end); /* contiguous */
        prev_end = (char *)p + sz;
        for (int i = 0; i <= r; i++) CHECK(p[i] == 1000 * r + i);
        if (r == nr) CHECK(p == mine);
    }
    MPI_Aint sz;
    int du;
    long *p0;
    CHECK(MPI_Win_shared_query(w, MPI_PROC_NULL, &sz, &du, &p0) == MPI_SUCCESS && sz == 8);
    /* an atomic through the window on the neighbour's part (once everyone has looked) */
    MPI_Barrier(node);
    long one_ = 1, old;
    CHECK(MPI_Fetch_and_op(&one_, &old, MPI_LONG, (nr + 1) % ns, 0, MPI_SUM, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    MPI_Barrier(node);
    CHECK(mine[0] == 1000 * nr + 1);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    /* A member with no bytes: its segment has no address (MPICH's
     * win_shared_noncontig_put); PROC_NULL finds the first non-empty one. */
    long *z;
    if (MPI_Win_allocate_shared(nr % 2 ? 0 : 16, 8, MPI_INFO_NULL, node, &z, &w) == MPI_SUCCESS) {
        for (int r = 0; r < ns; r++) {
            long *q = (long *)&sz;
            CHECK(MPI_Win_shared_query(w, r, &sz, &du, &q) == MPI_SUCCESS);
            CHECK(r % 2 ? sz == 0 && q == NULL : sz == 16 && q != NULL);
        }
        CHECK(MPI_Win_shared_query(w, MPI_PROC_NULL, &sz, &du, &p0) == MPI_SUCCESS && sz == 16 && p0 != NULL);
        CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    }
    /* shared_query on another flavour */
    int *m;
    CHECK(MPI_Win_allocate(64, 4, MPI_INFO_NULL, node, &m, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    CHECK(cls(MPI_Win_shared_query(w, 0, &sz, &du, &p0)) == MPI_ERR_RMA_FLAVOR);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    pscw(w, mem, 0);
    pscw(w, mem, 1);
    requests(w, mem);
    derived_origin(w, mem);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);

    mem = calloc(64, sizeof(int));
    CHECK(MPI_Win_create(mem, 64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    pscw(w, mem, 0);
    requests(w, mem);
    derived_origin(w, mem);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    free(mem);

    dynamic();
    shared();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma2: ok\n");
    MPI_Finalize();
    return 0;
}
