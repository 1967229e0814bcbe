/*
 * shmem_lat.c -- OpenSHMEM get and atomic latencies and put/get bandwidth, for the combined
 * MsgRate run (`msgrate --with shmem --peers-run`): built with skif-oshcc (impl skifshmem)
 * and with Open MPI's oshcc (impl oshmem), because ../shared/peers/msgrate_shmem.c measures
 * small puts only.
 *
 * Tests (CSV on PE 0's stdout: impl,test,size,value,unit), PE 0 alone works, PE 1 waits in
 * the barrier. Latencies: value = elapsed / N, one whole operation (a round trip, not
 * halved)                                                                            [us]:
 *   get_lat        shmem_getmem(size bytes from PE 1), sizes 8, 64, 1024, 4096 (up to -m)
 *   fetch_add_lat  shmem_long_atomic_fetch_add(1) on PE 1's counter (size 8)
 * Bandwidth, sizes 64 KiB, 256 KiB, 1 MiB, 4 MiB (with -m: 64 KiB whatever it says, larger
 * ones up to it); value = N * size / elapsed                                [MB/s, 10^6 B/s]:
 *   put_bw         N x shmem_putmem(size bytes to PE 1's symmetric buffer), then shmem_quiet
 *   get_bw         N x shmem_getmem(size bytes of PE 1's symmetric buffer)
 *   memcpy_bw      N x memcpy between two private buffers of PE 0 (the machine's baseline
 *                  for the two above, measured in the same program)
 * Per point: a calibration pass (N doubles until a pass takes >= 50 ms), then REPS passes
 * adding up to TARGET seconds (the bandwidth tests of one size share TARGET, their passes
 * taking turns); the median (-s best: the fastest) is printed. Every get's
 * data, the counter's final value, and the data of every put, get and memcpy size are
 * checked.
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
#define BW_MIN (64L << 10)
#define BW_MAX (4L << 20)
static const long BW_SIZES[] = {64L << 10, 256L << 10, 1L << 20, 4L << 20};
static const char *BW_NAMES[] = {"put_bw", "get_bw", "memcpy_bw"};
static unsigned char src_sym[MAXSIZE_ALL]; /* symmetric (global): PE 1's is read */
static long counter;                         /* symmetric: PE 1's is incremented */
static int me;
static unsigned char *bw_put, *bw_get;       /* symmetric heap, BW_MAX each: PE 1's are the
                                                targets of the puts and the gets */
static unsigned char *bw_src, *bw_dst;       /* private, BW_MAX each */

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

static unsigned char pattern(long i, int salt) { return (unsigned char)(i * 7 + salt); }

/* PE 0: one pass of n transfers of size bytes (test: 0 put, 1 get, 2 memcpy); returns
 * seconds per transfer. */
static double bw_pass(int test, long size, long n)
{
    double t0 = now();
    if (test == 0) {
        for (long i = 0; i < n; i++) shmem_putmem(bw_put, bw_src, (size_t)size, 1);
        shmem_quiet();
    } else if (test == 1) {
        for (long i = 0; i < n; i++) shmem_getmem(bw_dst, bw_get, (size_t)size, 1);
    } else {
        for (long i = 0; i < n; i++) {
            memcpy(bw_dst, bw_src, (size_t)size);
            __asm__ volatile("" ::: "memory"); /* every copy happens */
        }
    }
    return (now() - t0) / (double)n;
}

/* PE 0: the data of the last pass of test at size: a put leaves bw_src's pattern (salt 1)
 * in PE 1's bw_put (read back with a get), a get brings PE 1's bw_get (salt 2), memcpy
 * copies bw_src. */
static void bw_check(int test, long size)
{
    memset(bw_dst, 0, (size_t)size);
    if (test == 0) shmem_getmem(bw_dst, bw_put, (size_t)size, 1);
    if (test == 1) shmem_getmem(bw_dst, bw_get, (size_t)size, 1);
    if (test == 2) memcpy(bw_dst, bw_src, (size_t)size);
    for (long i = 0; i < size; i++)
        if (bw_dst[i] != pattern(i, test == 1 ? 2 : 1)) die("wrong data after a bandwidth pass");
}

int main(int argc, char **argv)
{
    const char *impl = "shmem";
    double target = 0.3;
    int reps = 5, maxsize = MAXSIZE_ALL, capped = 0, best = 0, header = 0, opt;
    while ((opt = getopt(argc, argv, "i:t:r:m:s:H")) != -1) {
        switch (opt) {
        case 'i': impl = optarg; break;
        case 't': target = atof(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'm': maxsize = atoi(optarg); capped = 1; break;
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
    bw_put = shmem_calloc(BW_MAX, 1);
    bw_get = shmem_malloc(BW_MAX);
    /* page-aligned: glibc's memcpy of 2 KiB to 512 KiB runs ~15x slower on this machine's
     * AMD CPU when the destination is 1-31 bytes past the source modulo 4096 (two malloc
     * buffers can be), and the baseline is the machine's full memcpy speed */
    void *ps = NULL, *pd = NULL;
    if (posix_memalign(&ps, 4096, BW_MAX) || posix_memalign(&pd, 4096, BW_MAX)) die("out of memory");
    bw_src = ps;
    bw_dst = pd;
    if (!bw_put || !bw_get) die("out of memory");
    for (long i = 0; i < BW_MAX; i++) {
        bw_get[i] = pattern(i, 2);
        bw_src[i] = pattern(i, 1);
        bw_dst[i] = 0;
    }
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
        /* bandwidth: per size, the passes of put, get and memcpy take turns (the same load
         * on the machine for the three) */
        for (unsigned k = 0; k < sizeof BW_SIZES / sizeof BW_SIZES[0]; k++) {
            long size = BW_SIZES[k], m[3];
            if (size > BW_MIN && capped && size > maxsize) break;
            for (int test = 0; test < 3; test++) {
                long n = 1;
                double per;
                for (;;) {
                    per = bw_pass(test, size, n);
                    if (per * (double)n >= 0.05) break;
                    n *= 2;
                }
                m[test] = (long)(target / 3 / reps / per);
                if (m[test] < 1) m[test] = 1;
            }
            double v[3][MAX_REPS];
            for (int r = 0; r < reps; r++)
                for (int test = 0; test < 3; test++)
                    v[test][r] = (double)size / bw_pass(test, size, m[test]) / 1e6;
            for (int test = 0; test < 3; test++) {
                bw_check(test, size);
                qsort(v[test], (size_t)reps, sizeof v[test][0], cmp_double);
                printf("%s,%s,%ld,%.0f,MB/s\n", impl, BW_NAMES[test], size,
                       best ? v[test][reps - 1] : v[test][(reps - 1) / 2]);
            }
            fflush(stdout);
        }
    }
    shmem_barrier_all();
    shmem_free(bw_get);
    shmem_free(bw_put);
    free(bw_src);
    free(bw_dst);
    shmem_finalize();
    return 0;
}
