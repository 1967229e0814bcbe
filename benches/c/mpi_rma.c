/*
 * mpi_rma.c -- MPI one-sided latency, rate and bandwidth (osu_put_latency / osu_get_bw
 * style, passive target), one source for mpi-lite (skif-mpicc), Open MPI and MPICH.
 *
 * Rank 0 is the origin, rank 1 the target, which waits in MPI_Barrier (so it progresses,
 * as an osu target does). Rank 0 locks rank 1 once (MPI_Win_lock shared), then per test:
 *   put / get         N x (MPI_Put|MPI_Get of SIZE bytes + MPI_Win_flush)   latency [us]
 *   acc               N x (MPI_Accumulate of one double, MPI_SUM + flush)   latency [us]
 *   fop               N x (MPI_Fetch_and_op of one long, MPI_SUM + flush)   latency [us]
 *   cas               N x (MPI_Compare_and_swap of one long + flush)        latency [us]
 *   put_rate          N x (64 MPI_Put of 8 B + one flush)                   rate [msg/s]
 *   put_bw / get_bw   1 KiB .. 4 MiB, N x (64 ops + one flush), as osu_put_bw  [GB/s]
 *   memcpy_bw         the same sizes, N x 64 memcpy between the origin's buffer and this
 *                     rank's own window memory (32 each way): the copy a put or get is on
 *                     one node, between the same buffers and kinds of mapping  [GB/s]
 *   lock_put          N x (MPI_Win_lock shared; MPI_Put of 8 B; MPI_Win_unlock): a whole
 *                     passive epoch (osu_put_latency -s lock)                 latency [us]
 * Per test: a calibration pass (N doubles until a pass takes >= 20 ms), then REPS passes;
 * with -s best, passes of >= 0.5 ms, 201 of them (or as many as fit in ~3 s, at least 11),
 * and the fastest is printed (on a loaded machine: the passes without another process's
 * time slice or cache traffic);
 * the three tests of one bandwidth size take turns pass by pass (the same load for all,
 * as the 0.8x-memcpy target compares them); the median is printed as CSV on rank 0: impl,test,size,value,unit. The counters of fop
 * and the data of put/get are checked at the end.
 * Window: MPI_Win_allocate (default) or -c: MPI_Win_create over malloc'd memory.
 * -l: the 8-byte tests only (no bandwidth sizes).
 *
 * Usage: mpirun -np 2 ./mpi_rma [-i IMPL] [-r REPS] [-s best] [-c] [-H] [-l]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "mpi_rma"
#include "mpi_common.h"

#define MAXB (4 << 20)
static MPI_Win win;
static char *buf, *mem;
static int reps = 5;
static int best; /* -s best: many short passes, the fastest printed */

enum test { PUT, GET, ACC, FOP, CAS, PUT_RATE, PUT_BW, GET_BW, LOCK_PUT, MEMCPY_BW };
static const char *names[] = {"put",    "get",    "acc",      "fop",      "cas",
                              "put_rate", "put_bw", "get_bw", "lock_put", "memcpy_bw"};

/* One pass of n iterations of test t on size bytes; seconds. */
static double pass(enum test t, int size, long n) {
    double one = 1.0, r;
    long l1 = 1, lr, cmp = 0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        switch (t) {
        case PUT: CHECK(MPI_Put(buf, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win)); break;
        case GET: CHECK(MPI_Get(buf, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win)); break;
        case ACC: CHECK(MPI_Accumulate(&one, 1, MPI_DOUBLE, 1, 8, 1, MPI_DOUBLE, MPI_SUM, win)); break;
        case FOP: CHECK(MPI_Fetch_and_op(&l1, &lr, MPI_LONG, 1, 16, MPI_SUM, win)); break;
        case CAS: CHECK(MPI_Compare_and_swap(&l1, &cmp, &lr, MPI_LONG, 1, 24, win)); break;
        case PUT_RATE:
        case PUT_BW:
            for (int k = 0; k < 64; k++)
                CHECK(MPI_Put(buf, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win));
            break;
        case GET_BW:
            for (int k = 0; k < 64; k++)
                CHECK(MPI_Get(buf, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win));
            break;
        case LOCK_PUT:
            CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
            CHECK(MPI_Put(buf, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win));
            CHECK(MPI_Win_unlock(1, win));
            continue; /* no flush: outside an epoch */
        case MEMCPY_BW:
            for (int k = 0; k < 32; k++) {
                memcpy(mem, buf, (size_t)size);
                __asm__ volatile("" ::: "memory"); /* every copy happens */
                memcpy(buf, mem, (size_t)size);
                __asm__ volatile("" ::: "memory");
            }
            continue; /* no MPI */
        }
        CHECK(MPI_Win_flush(1, win));
    }
    r = MPI_Wtime() - t0;
    (void)lr;
    return r;
}

/* The value printed for test t from seconds per iteration s. */
static void report(const char *impl, enum test t, int size, double s) {
    double v;
    const char *unit;
    switch (t) {
    case PUT_RATE: v = 64.0 / s; unit = "msg/s"; break;
    case PUT_BW:
    case GET_BW:
    case MEMCPY_BW: v = 64.0 * size / s / 1e9; unit = "GB/s"; break;
    default: v = s * 1e6; unit = "us"; break;
    }
    printf("%s,%s,%d,%.4f,%s\n", impl, names[t], size, v, unit);
    fflush(stdout);
}

/* Tests ts[0..nt) at one size, their passes taking turns; the target waits meanwhile. */
static void run_set(const char *impl, const enum test *ts, int nt, int size) {
    long n[3];
    int go, np = best ? 201 : reps;
    double *tm = malloc(sizeof(double) * 3 * (size_t)np), least = best ? 0.0005 : 0.02;
    if (!tm) die("out of memory");
    if (rank == 0) {
        for (int j = 0; j < nt; j++) {
            n[j] = 1;
            while (pass(ts[j], size, n[j]) < least && n[j] < (1L << 30)) n[j] *= 2;
        }
        int done = 0;
        double t0 = MPI_Wtime();
        /* -s best: at most ~3 s a point (a slow peer's passes are long) */
        while (done < np && !(best && done >= 11 && MPI_Wtime() - t0 > 3.0)) {
            for (int j = 0; j < nt; j++) tm[j * np + done] = pass(ts[j], size, n[j]) / (double)n[j];
            done++;
        }
        for (int j = 0; j < nt; j++) {
            qsort(tm + j * np, (size_t)done, sizeof tm[0], cmp_double);
            report(impl, ts[j], size, tm[j * np + (best ? 0 : done / 2)]);
        }
    }
    free(tm);
    go = 1;
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD); /* the target waits (and progresses) here */
}

static void run(const char *impl, enum test t, int size) { run_set(impl, &t, 1, size); }

int main(int argc, char **argv) {
    const char *impl = "mpi";
    int create = 0, header = 0, small = 0, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-i") && i + 1 < argc) impl = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) best = !strcmp(argv[++i], "best");
        else if (!strcmp(argv[i], "-c")) create = 1;
        else if (!strcmp(argv[i], "-H")) header = 1;
        else if (!strcmp(argv[i], "-l")) small = 1;
    }
    if (reps < 1 || reps > MAX_REPS) reps = 5;
    if (np < 2) die("needs 2 ranks");
    buf = malloc(MAXB);
    memset(buf, 1, MAXB);
    if (create) {
        mem = calloc(1, MAXB);
        CHECK(MPI_Win_create(mem, MAXB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        CHECK(MPI_Win_allocate(MAXB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    /* displacement unit 1: the scalars live at bytes 8, 16, 24 */
    if (header && rank == 0) printf("impl,test,size,value,unit\n");
    if (rank == 0) CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
    run(impl, PUT, 8);
    run(impl, GET, 8);
    run(impl, ACC, 8);
    run(impl, FOP, 8);
    run(impl, CAS, 8);
    run(impl, PUT_RATE, 8);
    static const enum test bw[] = {PUT_BW, GET_BW, MEMCPY_BW};
    for (int s = 1024; s <= MAXB && !small; s *= 4) run_set(impl, bw, 3, s);
    if (rank == 0) {
        /* check: a put then a get of a pattern */
        for (int i = 0; i < 64; i++) buf[i] = (char)i;
        CHECK(MPI_Put(buf, 64, MPI_BYTE, 1, 4096, 64, MPI_BYTE, win));
        CHECK(MPI_Win_flush(1, win));
        memset(buf, 0, 64);
        CHECK(MPI_Get(buf, 64, MPI_BYTE, 1, 4096, 64, MPI_BYTE, win));
        CHECK(MPI_Win_flush(1, win));
        for (int i = 0; i < 64; i++)
            if (buf[i] != (char)i) die("put/get data differ");
        CHECK(MPI_Win_unlock(1, win));
    }
    run(impl, LOCK_PUT, 8);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_free(&win));
    if (create) free(mem);
    free(buf);
    MPI_Finalize();
    return 0;
}
