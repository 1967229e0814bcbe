/*
 * mpi_putloop.c -- the instruction-count probe of one 8-byte one-sided operation
 * (callgrind): rank 0 locks rank 1's window (MPI_Win_allocate) once, issues N operations,
 * one MPI_Win_flush and unlocks; rank 1 waits in MPI_Barrier. Run with N and 2N under
 * callgrind: the difference of rank 0's instructions / N is the cost of one operation
 * (with the probe's loop, ~18 instructions).
 *
 *   put    MPI_Put of 8 bytes (MPI_BYTE)           get    MPI_Get of 8 bytes
 *   acc    MPI_Accumulate of one double, MPI_SUM   fop    MPI_Fetch_and_op, long, MPI_SUM
 *   cas    MPI_Compare_and_swap of one long        flush  MPI_Win_flush alone
 *   putflush  MPI_Put + MPI_Win_flush (the latency loop of benches/c/mpi_rma.c)
 *   lockput   MPI_Win_lock + MPI_Put + MPI_Win_unlock (a whole passive epoch)
 *
 * The result is checked on rank 1 (puts, accumulates, fetch-and-ops).
 * Usage: skifrun -n 2 -- [valgrind --tool=callgrind] ./mpi_putloop N [OP]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, bad = 0;
    long n = argc > 1 ? atol(argv[1]) : 10000;
    const char *op = argc > 2 ? argv[2] : "put";
    char *mem;
    long v = 42, r = 0, one = 1, cmp = 0;
    double d = 1.0;
    MPI_Win w;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
    memset(mem, 0, 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    static const char *ops[] = {"put", "get", "acc", "fop", "cas", "flush", "putflush", "lockput"};
    int k = 0;
    while (k < 8 && strcmp(op, ops[k])) k++;
    if (k == 8) {
        fprintf(stderr, "mpi_putloop: unknown operation %s\n", op);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        int lockput = k == 7;
        if (!lockput) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
        for (long i = 0; i < n; i++) {
            switch (k) {
            case 0: MPI_Put(&v, 8, MPI_BYTE, 1, 8 * (i & 63), 8, MPI_BYTE, w); break;
            case 1: MPI_Get(&r, 8, MPI_BYTE, 1, 8 * (i & 63), 8, MPI_BYTE, w); break;
            case 2: MPI_Accumulate(&d, 1, MPI_DOUBLE, 1, 1024, 1, MPI_DOUBLE, MPI_SUM, w); break;
            case 3: MPI_Fetch_and_op(&one, &r, MPI_LONG, 1, 2048, MPI_SUM, w); break;
            case 4: MPI_Compare_and_swap(&one, &cmp, &r, MPI_LONG, 1, 3072, w); break;
            case 5: MPI_Win_flush(1, w); break;
            case 6:
                MPI_Put(&v, 8, MPI_BYTE, 1, 8 * (i & 63), 8, MPI_BYTE, w);
                MPI_Win_flush(1, w);
                break;
            default:
                MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
                MPI_Put(&v, 8, MPI_BYTE, 1, 8 * (i & 63), 8, MPI_BYTE, w);
                MPI_Win_unlock(1, w);
            }
        }
        if (!lockput) {
            MPI_Win_flush(1, w);
            MPI_Win_unlock(1, w);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        if (strstr(op, "put") && *(long *)(mem + 8) != 42) bad = 1;
        if (!strcmp(op, "acc") && *(double *)(mem + 1024) != (double)n) bad = 1;
        if (!strcmp(op, "fop") && *(long *)(mem + 2048) != n) bad = 1;
        if (!strcmp(op, "cas") && *(long *)(mem + 3072) != 1) bad = 1;
        if (bad) fprintf(stderr, "mpi_putloop: %s: the data did not arrive\n", op);
    }
    MPI_Win_free(&w);
    MPI_Finalize();
    return bad;
}
