/* Bad input under MPI_ERRORS_RETURN: each call returns its documented error class and
 * nothing is lost. Calls before MPI_Init and after MPI_Finalize, invalid communicator /
 * datatype / rank / tag / count / request, truncation, one-sided calls on no window,
 * Error_string/Error_class. Any rank count >= 2. */
#include "check.h"
#include <string.h>

static int cls(int code) {
    int c;
    MPI_Error_class(code, &c);
    return c;
}

int main(int argc, char **argv) {
    int x = 1, flag;
    /* Before Init: MPI_ERR_OTHER (the world handler may be set first, as MPI-4 allows). */
    MPI_Initialized(&flag);
    CHECK(!flag);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_OTHER);
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_ERR_OTHER);
    CHECK(MPI_Finalize() == MPI_ERR_OTHER);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_RETURN);
    CHECK(MPI_Init(&argc, &argv) == MPI_ERR_OTHER); /* twice */

    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    CHECK(cls(MPI_Send(&x, 1, MPI_INT, peer, 0, (MPI_Comm)12345)) == MPI_ERR_COMM);
    CHECK(MPI_Send(&x, 1, MPI_INT, peer, 0, MPI_COMM_NULL) == MPI_ERR_COMM);
    CHECK(MPI_Send(&x, 1, (MPI_Datatype)999, peer, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Send(&x, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD) == MPI_ERR_RANK);
    CHECK(MPI_Send(&x, 1, MPI_INT, peer, -1, MPI_COMM_WORLD) == MPI_ERR_TAG);
    CHECK(MPI_Send(&x, -1, MPI_INT, peer, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT);
    CHECK(MPI_Send(NULL, 4, MPI_INT, peer, 0, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    CHECK(MPI_Recv(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_ERR_RANK);
    CHECK(MPI_Recv(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_ERR_TAG);
    MPI_Request bogus = 4242;
    CHECK(MPI_Wait(&bogus, MPI_STATUS_IGNORE) == MPI_ERR_REQUEST);
    MPI_Datatype dt = MPI_INT;
    CHECK(MPI_Type_free(&dt) == MPI_ERR_TYPE);
    MPI_Comm w = MPI_COMM_WORLD;
    CHECK(MPI_Comm_free(&w) == MPI_ERR_COMM);
    int dims[2] = {0, 4};
    CHECK(MPI_Dims_create(6, 2, dims) == MPI_ERR_DIMS);
    CHECK(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &x, &x) == MPI_ERR_TOPOLOGY);
    int big = 1 << 20;
    CHECK(MPI_Bsend(&x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD) == MPI_ERR_BUFFER); /* nothing attached */
    (void)big;
    /* Overlapping send and receive buffers (not MPI_IN_PLACE): detected on every rank
     * before any communication. */
    int ov[3] = {1, 2, 3};
    CHECK(MPI_Allreduce(&ov[0], &ov[1], 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_BUFFER);

    /* Truncation: the first bytes land, the error is MPI_ERR_TRUNCATE; the next message is intact. */
    long out[4] = {rank, rank + 1, rank + 2, rank + 3}, in[2] = {-1, -1};
    MPI_Request r;
    MPI_Isend(out, 4, MPI_LONG, peer, 1, MPI_COMM_WORLD, &r);
    CHECK(MPI_Recv(in, 2, MPI_LONG, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_ERR_TRUNCATE);
    CHECK(in[0] == from && in[1] == from + 1);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Send(out, 1, MPI_LONG, peer, 2, MPI_COMM_WORLD);
    CHECK(MPI_Recv(in, 2, MPI_LONG, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS && in[0] == from);
    /* Truncated nonblocking receive reported through Waitall's statuses. */
    MPI_Request rr[2];
    MPI_Status sts[2];
    MPI_Irecv(in, 1, MPI_LONG, from, 3, MPI_COMM_WORLD, &rr[0]);
    MPI_Isend(out, 2, MPI_LONG, peer, 3, MPI_COMM_WORLD, &rr[1]);
    CHECK(MPI_Waitall(2, rr, sts) == MPI_ERR_IN_STATUS);
    CHECK(sts[0].MPI_ERROR == MPI_ERR_TRUNCATE && sts[1].MPI_ERROR == MPI_SUCCESS);
    CHECK(rr[0] == MPI_REQUEST_NULL && rr[1] == MPI_REQUEST_NULL);

    /* One-sided: a call on no window is MPI_ERR_WIN (rma.c and rma2.c test the windows). */
    MPI_Win win = MPI_WIN_NULL;
    char buf[64];
    CHECK(cls(MPI_Put(buf, 1, MPI_CHAR, 0, 0, 1, MPI_CHAR, win)) == MPI_ERR_WIN);
    CHECK(cls(MPI_Win_fence(0, win)) == MPI_ERR_WIN);
    /* Persistent requests exist (tests/c/persist.c); a bad rank is caught at init. */
    CHECK(cls(MPI_Send_init(&x, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, &r)) == MPI_ERR_RANK);

    char msg[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(MPI_ERR_TRUNCATE, msg, &len);
    CHECK(len > 0 && strstr(msg, "TRUNCATE") != NULL);
    CHECK(MPI_Error_string(123456, msg, &len) == MPI_ERR_ARG);

    /* A communicator keeps its own handler: ERRORS_RETURN on world, dup inherits it. */
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    CHECK(MPI_Send(&x, 1, MPI_INT, size, 0, d) == MPI_ERR_RANK);
    MPI_Comm_free(&d);

    CHECK(MPI_Finalize() == MPI_SUCCESS);
    /* After Finalize. */
    MPI_Finalized(&flag);
    CHECK(flag);
    CHECK(MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_OTHER);
    CHECK(MPI_Finalize() == MPI_ERR_OTHER);
    CHECK(MPI_Wtime() >= 0.0);
    if (rank == 0) printf("errors: %d ranks ok\n", size);
    return 0;
}
