/*
 * mpi_coll.c -- small-collective latency over standard MPI, for the combined MsgRate run
 * (`msgrate --with mpi-lite --peers-run`): built with skif-mpicc (impl mpi-lite) and with
 * Open MPI's mpicc (impl openmpi), because ../shared/peers/msgrate_mpi.c has no collectives.
 *
 * Tests (CSV on rank 0's stdout: impl,test,size,value,unit), osu_barrier/osu_allreduce style:
 *   barrier    N x MPI_Barrier(MPI_COMM_WORLD); value = elapsed / N              [us]
 *   allreduce  N x MPI_Allreduce of one double (8 B, MPI_SUM); value = elapsed / N [us]
 *              (every result is checked)
 *   ibarrier   N x (MPI_Ibarrier + MPI_Wait), osu_ibarrier with no compute           [us]
 *   iallreduce N x (MPI_Iallreduce of one double + MPI_Wait), osu_iallreduce likewise [us]
 * Per test: a warm-up/calibration pass (N doubles until a pass takes >= 50 ms), then REPS
 * passes adding up to TARGET seconds; each pass starts after a barrier and its time is the
 * slowest rank's (MPI_MAX, outside the timed loop); the median (or -s best: the fastest)
 * is printed. Rank 0 decides N. Any number of ranks (the target is 2).
 * Rank r pins itself to CPU r when there are at least as many CPUs as ranks (what
 * `mpirun --bind-to core --map-by core` does for the peer), so a wait that spins never
 * shares its CPU with the rank it waits for.
 *
 * Usage: mpirun -np 2 ./mpi_coll [-i IMPL] [-t TARGET_S] [-r REPS] [-s median|best] [-H]
 *        (-m is accepted and ignored, so the combined run passes the same options as to
 *        mpi_bw.c)
 * Exit status: 0, or non-zero (MPI_Abort) on an MPI error or a wrong result.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "mpi_coll"
#include "mpi_common.h"

static int np;

enum test { BARRIER, ALLREDUCE, IBARRIER, IALLREDUCE };

static void pin(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (ncpu < np) return;
    CPU_ZERO(&set);
    CPU_SET(rank, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        fprintf(stderr, "mpi_coll: rank %d: could not pin to CPU %d (measuring unpinned)\n", rank, rank);
}

/* One pass of n operations; returns the slowest rank's elapsed seconds (on every rank). */
static double pass(enum test t, long n)
{
    double t0, el, max = 0;
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    if (t == BARRIER) {
        for (long i = 0; i < n; i++) CHECK(MPI_Barrier(MPI_COMM_WORLD));
    } else if (t == IBARRIER) {
        for (long i = 0; i < n; i++) {
            MPI_Request q;
            CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &q));
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        }
    } else if (t == IALLREDUCE) {
        const double base = (double)np * (np + 1) / 2;
        for (long i = 0; i < n; i++) {
            double in = (double)(rank + 1 + i), out = -1;
            MPI_Request q;
            CHECK(MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q));
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
            if (out != base + (double)np * (double)i) die("wrong iallreduce result");
        }
    } else {
        /* sum over ranks r of (r + 1 + i) = np(np+1)/2 + np*i: exact in a double here */
        const double base = (double)np * (np + 1) / 2;
        for (long i = 0; i < n; i++) {
            double in = (double)(rank + 1 + i), out = -1;
            CHECK(MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
            if (out != base + (double)np * (double)i) die("wrong allreduce result");
        }
    }
    el = MPI_Wtime() - t0;
    CHECK(MPI_Allreduce(&el, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return max;
}

int main(int argc, char **argv)
{
    const char *impl = "mpi";
    double target = 0.3;
    int reps = 5, best = 0, header = 0, opt;
    while ((opt = getopt(argc, argv, "i:t:r:m:s:H")) != -1) {
        switch (opt) {
        case 'i': impl = optarg; break;
        case 't': target = atof(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'm': break;
        case 's': best = strcmp(optarg, "best") == 0; break;
        case 'H': header = 1; break;
        default: fprintf(stderr, "usage: see the header of mpi_coll.c\n"); return 1;
        }
    }
    if (reps < 1 || reps > MAX_REPS || target <= 0) {
        fprintf(stderr, "mpi_coll: -r must be 1..%d and -t > 0\n", MAX_REPS);
        return 1;
    }
    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &np));
    pin();
    if (rank == 0 && header) printf("impl,test,size,value,unit\n");
    static const struct { enum test t; const char *name; int size; } TESTS[] = {
        {BARRIER, "barrier", 0},
        {ALLREDUCE, "allreduce", 8},
        {IBARRIER, "ibarrier", 0},
        {IALLREDUCE, "iallreduce", 8},
    };
    for (size_t k = 0; k < sizeof TESTS / sizeof TESTS[0]; k++) {
        long n = 1;
        double el;
        while ((el = pass(TESTS[k].t, n)) < 0.05) n *= 2;
        double per = el / (double)n, v[MAX_REPS];
        long m = (long)(target / reps / per);
        if (m < 1) m = 1;
        CHECK(MPI_Bcast(&m, 1, MPI_LONG, 0, MPI_COMM_WORLD));
        for (int r = 0; r < reps; r++) v[r] = pass(TESTS[k].t, m) / (double)m * 1e6;
        qsort(v, (size_t)reps, sizeof v[0], cmp_double);
        if (rank == 0) {
            printf("%s,%s,%d,%.3f,us\n", impl, TESTS[k].name, TESTS[k].size,
                   best ? v[0] : v[(reps - 1) / 2]);
            fflush(stdout);
        }
    }
    CHECK(MPI_Finalize());
    return 0;
}
