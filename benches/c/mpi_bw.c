/*
 * mpi_bw.c -- large-message bandwidth over standard MPI, for the combined MsgRate run
 * (`msgrate --with mpi-lite --peers-run`): built with skif-mpicc (impl mpi-lite) and with
 * Open MPI's mpicc (impl openmpi), because ../shared/peers/msgrate_mpi.c stops at 64 KiB.
 *
 * Test (CSV on rank 0's stdout: impl,test,size,value,unit):
 *   bandwidth  rank 0: N x MPI_Send(size), then waits for a 4-byte ack that rank 1 sends
 *              after its N-th MPI_Recv; value = N * size / elapsed            [MB/s, 10^6 B/s]
 * Sizes 1, 2, 4, 8, 16 MiB (up to -m). Per size: one checked transfer (every byte), then a
 * calibration pass (N doubles until a pass takes >= 50 ms), then REPS passes adding up to
 * TARGET seconds; the median (or -s best: the fastest) is printed. Rank 0 decides N.
 *
 * Usage: mpirun -np 2 ./mpi_bw [-i IMPL] [-t TARGET_S] [-r REPS] [-m MAXSIZE] [-s median|best] [-H]
 * Exit status: 0, or non-zero (MPI_Abort) on an MPI error or wrong data.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "mpi_bw"
#include "mpi_common.h"


/* One pass of n messages; returns rank 0's elapsed seconds (broadcast). */
static double pass(unsigned char *buf, int size, long n)
{
    int ack = 0;
    double t0, el = 0;
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    if (rank == 0) {
        for (long i = 0; i < n; i++) CHECK(MPI_Send(buf, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        CHECK(MPI_Recv(&ack, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        el = MPI_Wtime() - t0;
    } else {
        for (long i = 0; i < n; i++)
            CHECK(MPI_Recv(buf, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(MPI_Send(&ack, 1, MPI_INT, 0, 2, MPI_COMM_WORLD));
    }
    CHECK(MPI_Bcast(&el, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return el;
}

int main(int argc, char **argv)
{
    const char *impl = "mpi";
    double target = 0.3;
    int reps = 5, maxsize = 16 << 20, best = 0, header = 0, opt, np;
    while ((opt = getopt(argc, argv, "i:t:r:m:s:H")) != -1) {
        switch (opt) {
        case 'i': impl = optarg; break;
        case 't': target = atof(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'm': maxsize = atoi(optarg); break;
        case 's': best = strcmp(optarg, "best") == 0; break;
        case 'H': header = 1; break;
        default: fprintf(stderr, "usage: see the header of mpi_bw.c\n"); return 1;
        }
    }
    if (reps < 1 || reps > MAX_REPS || target <= 0) {
        fprintf(stderr, "mpi_bw: -r must be 1..%d and -t > 0\n", MAX_REPS);
        return 1;
    }
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    if (np != 2) die("needs exactly 2 ranks");
    unsigned char *buf = malloc((size_t)maxsize > 0 ? (size_t)maxsize : 1);
    if (!buf) die("out of memory");
    if (rank == 0 && header) printf("impl,test,size,value,unit\n");
    for (int size = 1 << 20; size <= maxsize && size > 0; size *= 2) {
        /* one checked transfer */
        for (int i = 0; i < size; i++) buf[i] = rank == 0 ? (unsigned char)(i * 7 + size) : 0;
        if (rank == 0) {
            CHECK(MPI_Send(buf, size, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
        } else {
            MPI_Status st;
            int count = -1;
            CHECK(MPI_Recv(buf, size, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st));
            CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
            if (count != size) die("wrong count");
            for (int i = 0; i < size; i++)
                if (buf[i] != (unsigned char)(i * 7 + size)) die("wrong data");
        }
        long n = 1;
        double el;
        while ((el = pass(buf, size, n)) < 0.05) n *= 2;
        double per = el / (double)n, v[MAX_REPS];
        long m = (long)(target / reps / per);
        if (m < 1) m = 1;
        CHECK(MPI_Bcast(&m, 1, MPI_LONG, 0, MPI_COMM_WORLD));
        for (int r = 0; r < reps; r++) v[r] = (double)m * size / pass(buf, size, m) / 1e6;
        qsort(v, (size_t)reps, sizeof v[0], cmp_double);
        if (rank == 0) {
            printf("%s,bandwidth,%d,%.1f,MB/s\n", impl, size, best ? v[reps - 1] : v[(reps - 1) / 2]);
            fflush(stdout);
        }
    }
    free(buf);
    CHECK(MPI_Finalize());
    return 0;
}
