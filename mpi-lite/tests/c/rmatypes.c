/* Derived target types on every path. On the message path a target type is described to
 * each target once and named by id afterwards (messages counted with mpi-lite's info key
 * mpi_lite_rma_messages); MPI_Type_free makes the target forget it, and types created
 * and freed in a loop (whose objects may reuse freed memory) never find a stale
 * description: every value is checked. */
#include "rmacount.h"

#define N 1024

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    for (int i = 0; i < N; i++) mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    int D = 200 * rank; /* this origin's part of its peer's window */
    int src[8], got[8];
    MPI_Datatype vt;
    CHECK(MPI_Type_vector(4, 1, 3, MPI_INT, &vt) == MPI_SUCCESS);
    CHECK(MPI_Type_commit(&vt) == MPI_SUCCESS);

    for (int i = 0; i < 8; i++) src[i] = rank * 100 + i;
    EXPECT_MSGS(2, 0, { /* the description, then the lock + put + unlock */
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(src, 8, MPI_INT, peer, D, 2, vt, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(1, 0, { /* known: the id only */
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(src, 8, MPI_INT, peer, D + 40, 2, vt, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    EXPECT_MSGS(2, 0, {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(got, 8, MPI_INT, peer, D, 2, vt, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    for (int i = 0; i < 8; i++) CHECK(got[i] == src[i]);
    int ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT_MSGS(1, 0, {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(ones, 8, MPI_INT, peer, D + 40, 2, vt, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    });
    CHECK(MPI_Type_free(&vt) == MPI_SUCCESS);

    /* Types made and freed in a loop: strides 3..5, each described anew. */
    for (int k = 0; k < 30; k++) {
        int stride = 3 + k % 3;
        MPI_Datatype t;
        CHECK(MPI_Type_vector(3, 2, stride, MPI_INT, &t) == MPI_SUCCESS);
        CHECK(MPI_Type_commit(&t) == MPI_SUCCESS);
        int v[6];
        for (int i = 0; i < 6; i++) v[i] = 1000 * k + 10 * rank + i;
        EXPECT_MSGS(2, 0, {
            CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
            CHECK(MPI_Put(v, 6, MPI_INT, peer, D + 100, 1, t, w) == MPI_SUCCESS);
            CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
        });
        int back[6] = {0};
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(back, 6, MPI_INT, peer, D + 100, 1, t, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
        for (int i = 0; i < 6; i++) CHECK(back[i] == v[i]);
        CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
    }

    /* A type freed inside the epoch, right after the put (ComEx's MPI-3 port of Global
     * Arrays does so): the put kept under the deferred lock still reaches the target,
     * the forget waits for it (it overtook it: "type 1 of rank 2 was never described"). */
    for (int k = 0; k < 3; k++) {
        MPI_Datatype t;
        CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &t) == MPI_SUCCESS);
        CHECK(MPI_Type_commit(&t) == MPI_SUCCESS);
        int v[2] = {7000 + 10 * rank + k, 7100 + 10 * rank + k}, back[3] = {0, 0, 0};
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(v, 2, MPI_INT, peer, D + 180, 1, t, w) == MPI_SUCCESS);
        CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(back, 3, MPI_INT, peer, D + 180, 3, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
        CHECK(back[0] == v[0] && back[2] == v[1]);
    }

    /* An indexed type with a negative lower bound (resized). */
    MPI_Datatype ix, rx;
    int bl[2] = {2, 1}, dp[2] = {0, 5};
    CHECK(MPI_Type_indexed(2, bl, dp, MPI_INT, &ix) == MPI_SUCCESS);
    CHECK(MPI_Type_create_resized(ix, -8, 8 * sizeof(int), &rx) == MPI_SUCCESS);
    CHECK(MPI_Type_commit(&rx) == MPI_SUCCESS);
    int iv[6];
    for (int i = 0; i < 6; i++) iv[i] = 5000 + 10 * rank + i;
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(iv, 6, MPI_INT, peer, D + 160, 2, rx, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);
    CHECK(MPI_Type_free(&rx) == MPI_SUCCESS);
    CHECK(MPI_Type_free(&ix) == MPI_SUCCESS);

    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w) == MPI_SUCCESS);
    int *p = mem + 200 * from;
    for (int i = 0; i < 8; i++) {
        int e = i / 4, j = i % 4;
        CHECK(p[e * 10 + 3 * j] == from * 100 + i);           /* extent of vt: 10 ints */
        CHECK(p[40 + e * 10 + 3 * j] == from * 100 + i + 1);  /* put, then +1 */
    }
    int k = 29, stride = 3 + k % 3;
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < 2; i++) CHECK(p[100 + b * stride + i] == 1000 * k + 10 * from + 2 * b + i);
    for (int e = 0; e < 2; e++) {
        int *q = p + 160 + e * 8;
        CHECK(q[0] == 5000 + 10 * from + 3 * e && q[1] == 5000 + 10 * from + 3 * e + 1);
        CHECK(q[5] == 5000 + 10 * from + 3 * e + 2);
    }
    CHECK(MPI_Win_unlock(rank, w) == MPI_SUCCESS);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    if (rank == 0) printf("rmatypes: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
