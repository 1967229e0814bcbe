/* Shared by the one-sided C tests: messages a window's operations sent, from mpi-lite's
 * info key mpi_lite_rma_messages, and the path (mpi_lite_rma_path, checked against
 * RMA_TEST_PATH when set). */
#ifndef MPI_LITE_TEST_RMACOUNT_H
#define MPI_LITE_TEST_RMACOUNT_H
#include "check.h"
#include <stdlib.h>
#include <string.h>

/* Messages sent so far on `w`; `*m`: the window is on the message path. */
static long rma_messages(MPI_Win w, int *m) {
    MPI_Info i;
    char v[64];
    int flag = 0;
    CHECK(MPI_Win_get_info(w, &i) == MPI_SUCCESS);
    CHECK(MPI_Info_get(i, "mpi_lite_rma_path", 63, v, &flag) == MPI_SUCCESS && flag);
    *m = strcmp(v, "messages") == 0;
    const char *want = getenv("RMA_TEST_PATH");
    if (want) CHECK(strcmp(want, v) == 0);
    CHECK(MPI_Info_get(i, "mpi_lite_rma_messages", 63, v, &flag) == MPI_SUCCESS && flag);
    MPI_Info_free(&i);
    return atol(v);
}

/* `body` sends `on_msg` messages on window `w` on the message path, `direct` on the
 * direct one (else the job aborts naming the line). */
#define EXPECT_MSGS(on_msg, direct, body) do { \
    int m_; long c0_ = rma_messages(w, &m_); body; long d_ = rma_messages(w, &m_) - c0_; \
    long want_ = m_ ? (long)(on_msg) : (long)(direct); \
    if (d_ != want_) { \
        fprintf(stderr, "%s: rank %d: line %d: %ld messages, expected %ld\n", __FILE__, rank, __LINE__, d_, want_); \
        MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)
#endif
