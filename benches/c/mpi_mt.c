/*
 * mpi_mt.c -- multi-threaded message rate over standard MPI with MPI_THREAD_MULTIPLE
 * (issue 17), threads x pairs: 2 ranks, T threads each; thread t of rank 0 sends to thread t
 * of rank 1, each pair on its own communicator (a dup of MPI_COMM_WORLD; -c shared: all on
 * MPI_COMM_WORLD, the pair's tag its own). Built with skif-mpicc (impl mpi-lite),
 * mpicc.openmpi and mpicc.mpich by scripts/mt-bench.sh, which runs them interleaved.
 *
 * Tests (CSV on rank 0's stdout: impl,test,size,value,unit; test = <name>_t<T>[_shared]):
 *   window   osu_mbw_mr per pair: 64 MPI_Isend / 64 MPI_Irecv (distinct buffers), MPI_Waitall,
 *            then a 4-byte ack from the receiver; value = T * 64 * N / elapsed      [msg/s]
 *   blocking the peers' msgrate per pair: N MPI_Send / N MPI_Recv, then an ack    [msg/s]
 *   latency  osu_latency_mt: every pair ping-pongs (Send+Recv / Recv+Send) on MPI_COMM_WORLD
 *            with one tag and source MPI_ANY_SOURCE on rank 1 (threads' messages cross);
 *            value = elapsed / (2N) per thread                                        [us]
 * Per test: calibration (N doubles until a pass takes >= 50 ms), then REPS passes adding up to
 * TARGET seconds; the median pass is printed (-s best: the fastest). A pass is timed by rank
 * 0's main thread between an MPI_Barrier and the end of its T threads (each ends on its
 * pair's ack, so the receiver has everything). The first pass of every test checks each
 * message's contents.
 *
 * Usage: mpirun -np 2 ./mpi_mt [-i IMPL] [-n THREADS] [-m SIZE] [-t TARGET_S] [-r REPS]
 *                              [-T window,blocking,latency] [-c own|shared] [-s median|best] [-H]
 * Exit status: 0, or non-zero (MPI_Abort) on an MPI error, a wrong value, or a library that
 * does not provide MPI_THREAD_MULTIPLE.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "mpi_mt"
#include "mpi_common.h"

#define WINDOW 64
#define MAXT 16
#define TAG_ACK 9000

enum test { WINDOW_T, BLOCKING_T, LATENCY_T };
static const char *names[] = {"window", "blocking", "latency"};

static int nthreads = 2, msize = 8, shared = 0, checking;
static long iters;
static enum test cur;
static MPI_Comm comms[MAXT];
static pthread_barrier_t start_b, end_b;
static volatile int quit;

static MPI_Comm comm_of(int t) { return shared ? MPI_COMM_WORLD : comms[t]; }
static int tag_of(int t) { return shared ? 10 + t : 1; }

static void fill(unsigned char *b, int t, long i)
{
    for (int k = 0; k < msize; k++) b[k] = (unsigned char)(t * 31 + i * 7 + k);
}
static void verify(const unsigned char *b, int t, long i)
{
    for (int k = 0; k < msize; k++)
        if (b[k] != (unsigned char)(t * 31 + i * 7 + k)) die("wrong message contents");
}

static void run_pass(int t, unsigned char *sb, unsigned char *rb)
{
    MPI_Comm c = comm_of(t);
    int tag = tag_of(t), peer = 1 - rank, ack = 0;
    MPI_Request rq[WINDOW];
    if (cur == WINDOW_T) {
        for (long i = 0; i < iters; i++) {
            if (rank == 0) {
                for (int w = 0; w < WINDOW; w++) {
                    if (checking) fill(sb + w * msize, t, i * WINDOW + w);
                    CHECK(MPI_Isend(sb + w * msize, msize, MPI_BYTE, peer, tag, c, &rq[w]));
                }
            } else {
                for (int w = 0; w < WINDOW; w++)
                    CHECK(MPI_Irecv(rb + w * msize, msize, MPI_BYTE, peer, tag, c, &rq[w]));
            }
            CHECK(MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE));
            if (checking && rank == 1)
                for (int w = 0; w < WINDOW; w++) verify(rb + w * msize, t, i * WINDOW + w);
        }
    } else if (cur == BLOCKING_T) {
        for (long i = 0; i < iters; i++) {
            if (rank == 0) {
                if (checking) fill(sb, t, i);
                CHECK(MPI_Send(sb, msize, MPI_BYTE, peer, tag, c));
            } else {
                CHECK(MPI_Recv(rb, msize, MPI_BYTE, peer, tag, c, MPI_STATUS_IGNORE));
                if (checking) verify(rb, t, i);
            }
        }
    } else {
        /* osu_latency_mt: one communicator, one tag, any source on the receiving side. */
        for (long i = 0; i < iters; i++) {
            if (rank == 0) {
                CHECK(MPI_Send(sb, msize, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
                CHECK(MPI_Recv(rb, msize, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                MPI_Status st;
                CHECK(MPI_Recv(rb, msize, MPI_BYTE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st));
                if (st.MPI_SOURCE != 0) die("latency: wrong source");
                CHECK(MPI_Send(sb, msize, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
            }
        }
        return;
    }
    /* The pair's ack: rank 0's thread ends only once everything arrived. */
    if (rank == 1)
        CHECK(MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK + t, c));
    else
        CHECK(MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK + t, c, MPI_STATUS_IGNORE));
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    unsigned char *sb = calloc(WINDOW, msize), *rb = calloc(WINDOW, msize);
    if (!sb || !rb) die("out of memory");
    for (;;) {
        pthread_barrier_wait(&start_b);
        if (quit) break;
        run_pass(t, sb, rb);
        pthread_barrier_wait(&end_b);
    }
    free(sb);
    free(rb);
    return NULL;
}

/* One pass of `n` iterations per thread: rank 0's elapsed seconds (on every rank). */
static double pass(long n)
{
    iters = n;
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    pthread_barrier_wait(&start_b);
    pthread_barrier_wait(&end_b);
    double el = MPI_Wtime() - t0;
    CHECK(MPI_Bcast(&el, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return el;
}

int main(int argc, char **argv)
{
    const char *impl = "mpi", *tests = "window,blocking,latency";
    double target = 0.4;
    int reps = 3, best = 0, header = 0, provided = -1, size;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-H")) { header = 1; continue; }
        if (!v) die("option without a value");
        i++;
        if (!strcmp(a, "-i")) impl = v;
        else if (!strcmp(a, "-n")) nthreads = atoi(v);
        else if (!strcmp(a, "-m")) msize = atoi(v);
        else if (!strcmp(a, "-t")) target = atof(v);
        else if (!strcmp(a, "-r")) reps = atoi(v);
        else if (!strcmp(a, "-T")) tests = v;
        else if (!strcmp(a, "-c")) shared = !strcmp(v, "shared");
        else if (!strcmp(a, "-s")) best = !strcmp(v, "best");
        else die("unknown option");
    }
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (provided != MPI_THREAD_MULTIPLE) die("MPI_THREAD_MULTIPLE not provided");
    if (size != 2) die("run with 2 ranks");
    if (nthreads < 1 || nthreads > MAXT || msize < 1 || reps < 1 || reps > MAX_REPS)
        die("bad -n, -m or -r");
    for (int t = 0; t < nthreads; t++) CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    pthread_barrier_init(&start_b, NULL, nthreads + 1);
    pthread_barrier_init(&end_b, NULL, nthreads + 1);
    pthread_t th[MAXT];
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(long)t) != 0) die("pthread_create");
    if (header && rank == 0) printf("impl,test,size,value,unit\n");
    for (int k = 0; k < 3; k++) {
        if (!strstr(tests, names[k])) continue;
        cur = (enum test)k;
        checking = 1;
        pass(2);
        checking = 0;
        long n = 8;
        double el;
        while ((el = pass(n)) < 0.05) n *= 2;
        long per = (long)(n * (target / reps) / el) + 1;
        double v[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            el = pass(per);
            double msgs = (double)per * nthreads * (cur == WINDOW_T ? WINDOW : 1);
            v[r] = cur == LATENCY_T ? el * 1e6 / (2.0 * per) : msgs / el;
        }
        qsort(v, reps, sizeof v[0], cmp_double);
        double out = best ? (cur == LATENCY_T ? v[0] : v[reps - 1]) : v[reps / 2];
        if (rank == 0) {
            printf("%s,%s_t%d%s,%d,%.6g,%s\n", impl, names[k], nthreads, shared ? "_shared" : "",
                   msize, out, cur == LATENCY_T ? "us" : "msg/s");
            fflush(stdout);
        }
    }
    quit = 1;
    pthread_barrier_wait(&start_b);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < nthreads; t++) CHECK(MPI_Comm_free(&comms[t]));
    MPI_Finalize();
    return 0;
}
