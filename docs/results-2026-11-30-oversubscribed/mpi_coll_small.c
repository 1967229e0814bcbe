/* MPI_Barrier, MPI_Allreduce of one double and an 8-byte ping-pong between the first and last
 * rank, us per call (rank 0 prints): docs/results-2026-11-30-oversubscribed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    for (int i = 0; i < 100; i++) MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) MPI_Barrier(MPI_COMM_WORLD);
    double tb = (MPI_Wtime() - t0) / iters * 1e6;
    double v = me, s;
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double ta = (MPI_Wtime() - t0) / iters * 1e6;
    char b[8] = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (me == 0) { MPI_Send(b, 8, MPI_CHAR, n - 1, 0, MPI_COMM_WORLD); MPI_Recv(b, 8, MPI_CHAR, n - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
        else if (me == n - 1) { MPI_Recv(b, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(b, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD); }
    }
    double tp = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    if (me == 0) printf("n=%d barrier %.2f us, allreduce8 %.2f us, pingpong 0<->%d half-rtt %.2f us\n", n, tb, ta, n - 1, tp);
    MPI_Finalize();
    return 0;
}
