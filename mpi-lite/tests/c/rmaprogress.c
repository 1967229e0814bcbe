/* Passive target while the target computes and makes no MPI call until the origins' data
 * is there: rank 0 spins on a word of its own window (a compute loop: no MPI call), which
 * only the other ranks' epochs (lock, put, flush, get, accumulate, put of the word,
 * unlock) set. It ends only if those epochs complete without rank 0 — on the direct path,
 * or on the message path with the asynchronous progress thread (SKIFMPI_ASYNC_PROGRESS=1).
 * No timing: a target that never progressed would leave rank 0 in its loop, which gives up
 * (failing) after RMA_SPIN_LIMIT seconds (default 50). */
#define _DEFAULT_SOURCE
#include "check.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

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
        const char *l = getenv("RMA_SPIN_LIMIT");
        double limit = l ? atof(l) : 50.0, t0 = now();
        volatile double x = 1.0;
        /* Computing: no MPI call until every origin's flag word is set. */
        while (__atomic_load_n(&mem[63], __ATOMIC_ACQUIRE) < size - 1) {
            for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
            if (now() - t0 > limit) {
                fprintf(stderr, "rmaprogress: the origins' epochs did not complete while rank 0 computed (%d of %d)\n",
                        __atomic_load_n(&mem[63], __ATOMIC_ACQUIRE), size - 1);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        printf("rmaprogress: rank 0 saw every epoch while computing\n");
    } else {
        int v = 100 + rank, got = -1, one = 1;
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
        CHECK(MPI_Get(&got, 1, MPI_INT, 0, rank, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
        CHECK(got == v);
        /* Exclusive, for the flag: the count of origins done. */
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w) == MPI_SUCCESS);
        CHECK(MPI_Accumulate(&one, 1, MPI_INT, 0, 63, 1, MPI_INT, MPI_SUM, w) == MPI_SUCCESS);
        CHECK(MPI_Win_unlock(0, w) == MPI_SUCCESS);
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
