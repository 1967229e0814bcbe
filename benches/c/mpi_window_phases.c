/*
 * mpi_window_phases.c -- where the time of a windowed message stream goes (the
 * msgrate_window / osu_mbw_mr pattern: rank 0 64 MPI_Isend + MPI_Waitall then waits for a
 * 4-byte ack; rank 1 64 MPI_Irecv into distinct buffers + MPI_Waitall, then sends the ack).
 * Each phase of every window is timed on both ranks with CLOCK_MONOTONIC (one machine: one
 * clock, comparable between the ranks, which MPI_Wtime need not be), and the averages
 * per window are printed:
 *   tx isend / waitall / ack   rank 0: posting the sends, completing them, waiting for the ack
 *   rx post / waitall / ack    rank 1: posting the receives, completing them, sending the ack
 *   ack latency                rank 1's Waitall done -> rank 0 past its MPI_Recv of the ack
 * The side whose phases add up to the window is the limit; a receiver whose post + waitall
 * fill the window is receive-bound (the sends were all in the channel before it waited).
 *
 * Usage: ./mpi_window_phases [SIZE [WINDOWS]]   (2 ranks; default 8 bytes, 20000 windows;
 * the first pass warms up, the second is measured)
 * E.g.: target/release/skifrun -n 2 -- /tmp/phases 8
 *       mpirun.openmpi -np 2 --bind-to core /tmp/phases.ompi 8
 * Exit status: 0, or non-zero on an MPI error or a bad argument.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define W 64
#define SLOT 65536

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int len = argc > 1 ? atoi(argv[1]) : 8;
    long n = argc > 2 ? atol(argv[2]) : 20000;
    if (size != 2 || len < 0 || len > SLOT || n < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_window_phases [SIZE<=%d [WINDOWS>=2]] (2 ranks)\n", SLOT);
        MPI_Finalize();
        return 2;
    }
    char *sbuf = calloc(1, SLOT), *rbuf = calloc(W, SLOT);
    double *t = malloc(sizeof(double) * 3 * (size_t)n); /* per window: 3 stamps */
    if (!sbuf || !rbuf || !t) {
        fprintf(stderr, "mpi_window_phases: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Request req[W];
    int ack = 0;
    double el = 0;
    for (int pass = 0; pass < 2; pass++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (long i = 0; i < n; i++) {
            double *s = t + 3 * i;
            s[0] = now();
            for (int w = 0; w < W; w++) {
                int rc = rank == 0
                    ? MPI_Isend(sbuf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[w])
                    : MPI_Irecv(rbuf + (size_t)w * SLOT, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[w]);
                if (rc != MPI_SUCCESS)
                    MPI_Abort(MPI_COMM_WORLD, 1);
            }
            s[1] = now();
            if (MPI_Waitall(W, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
                MPI_Abort(MPI_COMM_WORLD, 1);
            s[2] = now();
            int rc = rank == 0
                ? MPI_Recv(&ack, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
                : MPI_Send(&ack, 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS)
                MPI_Abort(MPI_COMM_WORLD, 1);
        }
        el = now() - t0;
    }
    /* rank 1's stamps to rank 0 */
    double *o = rank == 0 ? malloc(sizeof(double) * 3 * (size_t)n) : NULL;
    if (rank == 1)
        MPI_Send(t, (int)(3 * n), MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
    else if (!o || MPI_Recv(o, (int)(3 * n), MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
        double a[7] = {0};
        long k = 0;
        for (long i = n / 10; i < n - 1; i++, k++) { /* the first tenth left out: warm-up */
            const double *s = t + 3 * i, *r = o + 3 * i;
            a[0] += s[1] - s[0];
            a[1] += s[2] - s[1];
            a[2] += s[3] - s[2]; /* next window's start: past the ack */
            a[3] += r[1] - r[0];
            a[4] += r[2] - r[1];
            a[5] += r[3] - r[2];
            a[6] += s[3] - r[2];
        }
        double us = 1e6 / (double)k;
        printf("size %d: %.2f M msg/s; per window (us): tx isend %.3f waitall %.3f ack %.3f | "
               "rx post %.3f waitall %.3f ack %.3f | ack latency %.3f\n",
               len, (double)n * W / el / 1e6, a[0] * us, a[1] * us, a[2] * us, a[3] * us,
               a[4] * us, a[5] * us, a[6] * us);
        free(o);
    }
    free(t);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
