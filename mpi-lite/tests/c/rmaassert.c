/* Synchronisation assertions (MPI-3.1 §11.5.5): a value with a bit the call does not take
 * is MPI_ERR_ASSERT; honoured ones save messages (counted with mpi-lite's info key
 * mpi_lite_rma_messages): a MPI_MODE_NOPRECEDE fence sends no notices on the message path,
 * NOPRECEDE|NOSUCCEED nothing at all, post/start with MPI_MODE_NOCHECK no post notices;
 * the data moved in those epochs is checked. */
#include "rmacount.h"

static int err_class(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    for (int i = 0; i < 64; i++) mem[i] = -1;
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;

    /* Bad values: a bit the call does not take. */
    CHECK(err_class(MPI_Win_fence(12345, w)) == MPI_ERR_ASSERT);
    CHECK(err_class(MPI_Win_fence(MPI_MODE_NOCHECK, w)) == MPI_ERR_ASSERT);
    CHECK(err_class(MPI_Win_lock(MPI_LOCK_SHARED, peer, MPI_MODE_NOPRECEDE, w)) == MPI_ERR_ASSERT);
    CHECK(err_class(MPI_Win_lock_all(MPI_MODE_NOSTORE, w)) == MPI_ERR_ASSERT);
    MPI_Group wg, one;
    MPI_Win_get_group(w, &wg);
    MPI_Group_incl(wg, 1, &peer, &one);
    CHECK(err_class(MPI_Win_start(one, MPI_MODE_NOPUT, w)) == MPI_ERR_ASSERT);
    CHECK(err_class(MPI_Win_post(one, MPI_MODE_NOSUCCEED, w)) == MPI_ERR_ASSERT);
    MPI_Group_free(&one);
    /* Nothing was opened by the refused calls: a lock works. */
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Win_unlock(peer, w) == MPI_SUCCESS);

    /* Fences: NOPRECEDE opens without notices; the closing fence sends one per member. */
    int v = 10 + rank;
    EXPECT_MSGS(0, 0, CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSTORE, w) == MPI_SUCCESS));
    CHECK(MPI_Put(&v, 1, MPI_INT, peer, 1, 1, MPI_INT, w) == MPI_SUCCESS);
    EXPECT_MSGS(1 + size, 0, { /* the put, then a notice to every member */
        CHECK(MPI_Put(&v, 1, MPI_INT, peer, 2, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED | MPI_MODE_NOPUT, w) == MPI_SUCCESS);
    });
    CHECK(mem[1] == 10 + from && mem[2] == 10 + from);
    EXPECT_MSGS(0, 0, CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, w) == MPI_SUCCESS));
    /* Outside an epoch again: an operation is refused. */
    CHECK(err_class(MPI_Put(&v, 1, MPI_INT, peer, 3, 1, MPI_INT, w)) == MPI_ERR_RMA_SYNC);

    /* Post/start with NOCHECK: the barrier orders them; no post notice is sent. */
    MPI_Group to, by;
    MPI_Group_incl(wg, 1, &peer, &to);
    MPI_Group_incl(wg, 1, &from, &by);
    EXPECT_MSGS(0, 0, CHECK(MPI_Win_post(by, MPI_MODE_NOCHECK, w) == MPI_SUCCESS));
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_MSGS(0, 0, CHECK(MPI_Win_start(to, MPI_MODE_NOCHECK, w) == MPI_SUCCESS));
    v = 20 + rank;
    CHECK(MPI_Put(&v, 1, MPI_INT, peer, 4, 1, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_complete(w) == MPI_SUCCESS);
    CHECK(MPI_Win_wait(w) == MPI_SUCCESS);
    CHECK(mem[4] == 20 + from);
    /* Without NOCHECK: one post notice each way. */
    EXPECT_MSGS(1, 1, CHECK(MPI_Win_post(by, 0, w) == MPI_SUCCESS));
    CHECK(MPI_Win_start(to, 0, w) == MPI_SUCCESS);
    CHECK(MPI_Put(&v, 1, MPI_INT, peer, 5, 1, MPI_INT, w) == MPI_SUCCESS);
    CHECK(MPI_Win_complete(w) == MPI_SUCCESS);
    CHECK(MPI_Win_wait(w) == MPI_SUCCESS);
    CHECK(mem[5] == 20 + from);
    MPI_Group_free(&to);
    MPI_Group_free(&by);
    MPI_Group_free(&wg);
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    if (rank == 0) printf("rmaassert: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
