/* A lock_all epoch is not held back by a writer that asked later. On the message path the
 * shared locks of MPI_Win_lock_all go to each target with the first operation that waits,
 * after the call returned; here B's epoch has begun before W asks for rank T exclusively,
 * yet B's request reaches T behind W's, while A holds T shared and waits for B. With
 * seed 003's plain queue (shared requests wait behind a waiting writer) that was a
 * deadlock: A waits for B, B for W, W for A. It needs 4 ranks (with fewer, only the
 * window is made and freed). */
#define _POSIX_C_SOURCE 200809L
#include "rmacount.h"
#include <time.h>

enum { T = 0, A = 1, W = 2, B = 3 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    memset(mem, 0, 8 * sizeof(long));
    mem[0] = 7;
    int m;
    rma_messages(w, &m);
    MPI_Barrier(MPI_COMM_WORLD);
    long one = 1, got = -1;
    int tok = 0;
    if (size >= 4 && rank == B) {
        CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
        MPI_Send(&tok, 1, MPI_INT, A, 0, MPI_COMM_WORLD); /* B's epoch has begun */
        MPI_Recv(&tok, 1, MPI_INT, W, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* Let W's request reach T first (if it does not, the run proves nothing but passes). */
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
        CHECK(MPI_Get(&got, 1, MPI_LONG, T, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(T, w) == MPI_SUCCESS);
        CHECK(got == 7);
        MPI_Send(&tok, 1, MPI_INT, A, 2, MPI_COMM_WORLD);
        CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    } else if (size >= 4 && rank == A) {
        MPI_Recv(&tok, 1, MPI_INT, B, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(MPI_Win_lock_all(0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&got, 1, MPI_LONG, T, 0, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(T, w) == MPI_SUCCESS); /* T is locked (shared) by A now */
        CHECK(got == 7);
        MPI_Send(&tok, 1, MPI_INT, W, 3, MPI_COMM_WORLD);
        MPI_Recv(&tok, 1, MPI_INT, B, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* holding T */
        CHECK(MPI_Win_unlock_all(w) == MPI_SUCCESS);
    } else if (size >= 4 && rank == W) {
        MPI_Recv(&tok, 1, MPI_INT, A, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&tok, 1, MPI_INT, B, 1, MPI_COMM_WORLD); /* about to ask for T */
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&one, 1, MPI_LONG, T, 1, 1, MPI_LONG, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(T, w) == MPI_SUCCESS); /* after A and B released T */
    }
    MPI_Barrier(MPI_COMM_WORLD); /* T serves the others' requests in here */
    if (size >= 4 && rank == T) {
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w) == MPI_SUCCESS);
        CHECK(mem[1] == 1);
        CHECK(MPI_Win_unlock(T, w) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    if (rank == 0) printf("rmalockall: ok (%d ranks, %s path)\n", size, m ? "message" : "direct");
    MPI_Finalize();
    return 0;
}
