/* A peer that dies inside a passive-target epoch: rank 1 locks rank 0's window
 * exclusively and exits (status 3) without unlocking. Every other rank then asks for the
 * same lock and puts under it: each must get an error within a second (the lock's holder
 * is gone), never hang, and prints "rmadead: rank R ok". The error may come from the lock
 * or, where the lock is sent with the epoch's operations (the message path's aggregation),
 * from the unlock. Runs on the direct path and the message path. */
#include "check.h"
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *mem;
    MPI_Win w;
    CHECK(MPI_Win_allocate(64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w) == MPI_SUCCESS);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    if (rank == 1) {
        CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w) == MPI_SUCCESS);
        int v = 7;
        CHECK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w) == MPI_SUCCESS);
        CHECK(MPI_Win_flush(0, w) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        _exit(3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
    int v = rank;
    if (rc == MPI_SUCCESS) rc = MPI_Put(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, w);
    if (rc == MPI_SUCCESS) rc = MPI_Win_unlock(0, w);
    double dt = MPI_Wtime() - t0;
    if (rc != MPI_SUCCESS && dt < 1.0) {
        printf("rmadead: rank %d ok (%.3f s)\n", rank, dt);
        fflush(stdout);
    } else {
        fprintf(stderr, "rmadead: rank %d: rc %d after %.3f s\n", rank, rc, dt);
    }
    _exit(0);
}
