/*
 * shmem_lat.c -- OpenSHMEM get and atomic latencies, for the combined MsgRate run
 * (`msgrate --with shmem --peers-run`): built with skif-oshcc (impl skifshmem) and with
 * Open MPI's oshcc (impl oshmem), because ../shared/peers/msgrate_shmem.c measures puts only.
 *
 * Tests (CSV on PE 0's stdout: impl,test,size,value,unit), PE 0 alone works, PE 1 waits in
 * the barrier; value = elapsed / N, one whole operation (a round trip, not halved)  [us]:
 *   get_lat        shmem_getmem(size bytes from PE 1), sizes 8, 64, 1024, 4096 (up to -m)
 *   fetch_add_lat  shmem_long_atomic_fetch_add(1) on PE 1's counter (size 8)
 * Per point: a calibration pass (N doubles until a pass takes >= 50 ms), then REPS passes
 * adding up to TARGET seconds; the median (-s best: the fastest) is printed. Every get's
 * data and the counter's final value are checked.
 *
 * Usage: oshrun -np 2 ./shmem_lat [-i IMPL] [-t TARGET_S] [-r REPS] [-m MAXSIZE] [-s median|best] [-H]
 * Exit status: 0, or non-zero (shmem_global_exit) on wrong data.
 */
#define _GNU_SOURCE
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 15
#define MAXSIZE_ALL 4096
static const int SIZES[] = {8, 64, 1024, 4096};
static unsigned char src_sym[MAXSIZE_ALL]; /* symmetric (global): PE 1's is read */
static long counter;                         /* symmetric: PE 1's is incremented */
static int me;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "shmem_lat: PE %d: %s\n", me, what);
    shmem_global_exit(2);
    exit(2);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* PE 0: one pass of n operations; returns seconds per operation. */
static double pass(int test, int size, long n, unsigned char *dst)
{
    double t0 = now();
    if (test == 0) {
        for (long i = 0; i < n; i++) shmem_getmem(dst, src_sym, (size_t)size, 1);
    } else {
        for (long i = 0; i < n; i++) (void)shmem_long_atomic_fetch_add(&counter, 1, 1);
    }
    double el = now() - t0;
    if (test == 0) {
        for (int i = 0; i < size; i++)
            if (dst[i] != (unsigned char)(i * 13 + 1)) die("get returned wrong data");
        memset(dst, 0, (size_t)size);
    }
    return el / (double)n;
}

int main(int argc, char **argv)
{
    const char *impl = "shmem";
    double target = 0.3;
    int reps = 5, maxsize = MAXSIZE_ALL, best = 0, header = 0, opt;
    while ((opt = getopt(argc, argv, "i:t:r:m:s:H")) != -1) {
        switch (opt) {
        case 'i': impl = optarg; break;
        case 't': target = atof(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'm': maxsize = atoi(optarg); break;
        case 's': best = strcmp(optarg, "best") == 0; break;
        case 'H': header = 1; break;
        default: fprintf(stderr, "usage: see the header of shmem_lat.c\n"); return 1;
        }
    }
    if (reps < 1 || reps > MAX_REPS || target <= 0) {
        fprintf(stderr, "shmem_lat: -r must be 1..%d and -t > 0\n", MAX_REPS);
        return 1;
    }
    shmem_init();
    me = shmem_my_pe();
    if (shmem_n_pes() != 2) die("needs exactly 2 PEs");
    for (int i = 0; i < MAXSIZE_ALL; i++) src_sym[i] = (unsigned char)(i * 13 + 1);
    counter = 0;
    shmem_barrier_all();
    if (me == 0) {
        unsigned char *dst = calloc(MAXSIZE_ALL, 1);
        long total = 0;
        if (!dst) die("out of memory");
        if (header) printf("impl,test,size,value,unit\n");
        for (int test = 0; test < 2; test++) {
            for (unsigned k = 0; k < sizeof SIZES / sizeof SIZES[0]; k++) {
                int size = test == 0 ? SIZES[k] : 8;
                if (size > maxsize || (test == 1 && k > 0)) break;
                long n = 1;
                double per, v[MAX_REPS];
                for (;;) {
                    per = pass(test, size, n, dst);
                    if (test == 1) total += n;
                    if (per * (double)n >= 0.05) break;
                    n *= 2;
                }
                long m = (long)(target / reps / per);
                if (m < 1) m = 1;
                for (int r = 0; r < reps; r++) {
                    v[r] = pass(test, size, m, dst) * 1e6;
                    if (test == 1) total += m;
                }
                qsort(v, (size_t)reps, sizeof v[0], cmp_double);
                printf("%s,%s,%d,%.3f,us\n", impl, test == 0 ? "get_lat" : "fetch_add_lat", size,
                       best ? v[0] : v[(reps - 1) / 2]);
                fflush(stdout);
            }
        }
        if (shmem_long_atomic_fetch(&counter, 1) != total) die("fetch_add lost increments");
        free(dst);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
