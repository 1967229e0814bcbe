/* Passive target while the target computes without calling MPI: rank 0 sleeps 300 ms
 * outside MPI; every other rank locks rank 0's window, puts, flushes, gets, accumulates
 * and unlocks meanwhile. The data is checked afterwards. On the direct path the epoch
 * completes while rank 0 sleeps; on the message path without the progress thread once
 * rank 0 is back in MPI (rmaprogress.c checks the first without timing, and the progress
 * thread). */
#define _DEFAULT_SOURCE
#include "check.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    memset(mem, 0, 64 * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        usleep(300 * 1000); /* computing: no MPI call */
    } else {
        double t0 = MPI_Wtime();
        int v = 100 + rank, got = -1, one = 1;
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&got, 1, MPI_INT, 0, rank, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
        double dt = MPI_Wtime() - t0;
        CHECK(got == v);
        printf("rmapassive: rank %d: epoch done after %.3f s\n", rank, dt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(mem[0] == size - 1);
        for (int r = 1; r < size; r++) CHECK(mem[r] == 100 + r);
    }
    CHECK(MPI_Win_free(&w) == MPI_SUCCESS);
    MPI_Finalize();
    return 0;
}
