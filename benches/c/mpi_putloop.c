/*
 * mpi_putloop.c -- the instruction-count probe of one 8-byte MPI_Put (callgrind): rank 0
 * locks rank 1's window (MPI_Win_allocate) once, issues N MPI_Put of 8 bytes, one
 * MPI_Win_flush and unlocks; rank 1 waits in MPI_Barrier. Run with N and 2N under
 * callgrind: the difference of rank 0's instructions / N is the cost of one put.
 *
 * Usage: skifrun -n 2 -- [valgrind --tool=callgrind] ./mpi_putloop N
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank;
    long n = argc > 1 ? atol(argv[1]) : 10000;
    char *mem;
    long v = 42;
    MPI_Win w;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
        for (long i = 0; i < n; i++) MPI_Put(&v, 8, MPI_BYTE, 1, 8 * (i & 63), 8, MPI_BYTE, w);
        MPI_Win_flush(1, w);
        MPI_Win_unlock(1, w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 && *(long *)(mem + 8) != 42) {
        fprintf(stderr, "mpi_putloop: the data did not arrive\n");
        return 1;
    }
    MPI_Win_free(&w);
    MPI_Finalize();
    return 0;
}
