/*
 * armci_bench.c -- ARMCI latencies and bandwidths, one source for every ARMCI (issue 19):
 * built with armci-shim/bin/skif-armcicc (impl armci-shim, run under skifrun) and with
 * mpicc.openmpi / mpicc.mpich against Debian's ARMCI-MPI (libarmci-mpi-dev:
 * -larmci-openmpi, -larmci-mpich; impls armci-mpi-openmpi, armci-mpi-mpich), so that both
 * sides of a ratio run the same code and the same measuring rule. ARMCI-MPI's armci.h
 * defines ARMCI_MPI and needs MPI initialised first: then this program calls MPI_Init
 * before ARMCI_Init and MPI_Finalize after ARMCI_Finalize.
 *
 * Two ranks; rank 0 works, rank 1 waits in ARMCI_Barrier (passive target: what ARMCI
 * promises). Every operation targets rank 1's ARMCI_Malloc memory. CSV on rank 0's stdout
 * (impl,test,size,value,unit). Latencies, value = elapsed / N, one whole blocking call [us]:
 *   put_lat, get_lat   ARMCI_Put / ARMCI_Get of size bytes, sizes 8, 64, 1024 (up to -m)
 *   acc_lat            ARMCI_Acc(ARMCI_ACC_DBL, scale 1) of size bytes, sizes 8, 1024
 *   rmw_lat            ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, +1) on rank 1's counter (size 8)
 *   atomic_lat         a bare locked fetch-and-add on a private long (size 8), the passes
 *                      taking turns with rmw_lat's: the machine's floor for an Rmw (no
 *                      Rmw can take less than one such atomic)
 * Strided 2-D transfers of an n x n patch of doubles, n = 8, 16, ... 1024, out of matrices
 * whose rows are 2n doubles long on both sides (size = n*n*8 bytes; with -m, sizes up to
 * it) [MB/s, 10^6 B/s]:
 *   puts_bw, gets_bw   ARMCI_PutS / ARMCI_GetS (stride_levels 1)
 *   copy2d_bw          the same patch copied row by row with memcpy between two private
 *                      matrices (the machine's local baseline)
 * Contiguous bandwidth, sizes 1 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB (with -m: up
 * to it, 64 KiB always) [MB/s]:
 *   put_bw             N x ARMCI_Put, then ARMCI_Fence(1)
 *   get_bw             N x ARMCI_Get
 *   memcpy_bw          N x memcpy between two private buffers (page-aligned)
 * Per point: a calibration pass (N doubles until a pass takes >= 50 ms), then REPS passes
 * adding up to TARGET seconds; the tests of one bandwidth size share TARGET, their passes
 * taking turns (the same load on the machine for all). The median pass (-s best: the
 * fastest) is printed. Checked: every get's data, the accumulated sums, the counter, and
 * after each bandwidth size the data each test moved and the holes a strided put must
 * leave untouched. Rank r pins itself to CPU r when it may run on every CPU (under
 * `mpirun --bind-to core` it is bound already).
 * -W: rank 1 waits outside the library instead (asleep, polling a flag rank 0 puts at the
 * end every millisecond): what ARMCI promises (passive target), and how a target that
 * computes looks. An MPI rank waiting in a barrier spins in the MPI progress engine, which
 * can slow the origin's operations on its memory (ARMCI-MPI on Open MPI's osc/sm: 8 B put
 * ~0.25 us against ~0.03 us); an implementation that needs the target's progress (MPICH
 * over UCX) may hang with -W.
 *
 * Usage: skifrun -n 2 ./armci_bench [-i IMPL] [-t TARGET_S] [-r REPS] [-m MAXSIZE] [-s median|best] [-H] [-W]
 *        mpirun -n 2 ./armci_bench.openmpi -i armci-mpi-openmpi ...
 * Exit status: 0, or 2 (ARMCI_Error) on wrong data or a failed call.
 */
#define _GNU_SOURCE
#include <armci.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 15
#define LAT_MAX 1024
#define BW_MAX (4L << 20)
#define N2D_MAX 1024
/* the largest strided matrix: N2D_MAX rows of 2 * N2D_MAX doubles */
#define MAT_BYTES ((long)N2D_MAX * 2 * N2D_MAX * 8)
#define BIG (MAT_BYTES > BW_MAX ? MAT_BYTES : BW_MAX)
/* -W: the flag rank 0 puts when done, after the counter in rank 1's latency block */
#define FLAG_OFF (3 * LAT_MAX + 64)

static const int LAT_SIZES[] = {8, 64, 1024};
static const int ACC_SIZES[] = {8, 1024};
static const long BW_SIZES[] = {1L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20, 4L << 20};

static int me;
static void **lat_base, **big_base; /* per rank: the ARMCI_Malloc blocks */
static unsigned char *src, *dst;      /* private, BIG each, page-aligned */
static double target = 0.3;
static int reps = 5, best = 0;
static const char *impl = "armci";

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "armci_bench: rank %d: %s", me, what);
    ARMCI_Error(msg, 2);
    exit(2);
}

#define CHECK(call)                     \
    do {                                \
        if ((call) != 0) die(#call);    \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void pin(void)
{
    cpu_set_t set;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2 || ncpu <= me) return;
    CPU_ZERO(&set);
    CPU_SET(me, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        fprintf(stderr, "armci_bench: rank %d: could not pin to CPU %d (measuring unpinned)\n", me, me);
}

static unsigned char pattern(long i, int salt) { return (unsigned char)(i * 7 + salt); }

/* One measured thing: a pass of n operations of test at size, returning seconds per op. */
typedef double (*pass_fn)(int test, long size, long n);

/* The median (or fastest) of REPS passes of each of the tests first .. first+ntests-1 at
 * size, after a calibration pass each; the passes of the tests take turns. out[t] = seconds
 * per operation of test first + t. */
static void measure(pass_fn f, int first, int ntests, long size, double *out)
{
    long m[4];
    double v[4][MAX_REPS];
    for (int t = 0; t < ntests; t++) {
        long n = 1;
        double per;
        for (;;) {
            per = f(first + t, size, n);
            if (per * (double)n >= 0.05) break;
            n *= 2;
        }
        m[t] = (long)(target / ntests / reps / per);
        if (m[t] < 1) m[t] = 1;
    }
    for (int r = 0; r < reps; r++)
        for (int t = 0; t < ntests; t++) v[t][r] = f(first + t, size, m[t]);
    for (int t = 0; t < ntests; t++) {
        qsort(v[t], (size_t)reps, sizeof v[t][0], cmp_double);
        out[t] = best ? v[t][0] : v[t][(reps - 1) / 2];
    }
}

/* ---- latencies: lat_base[1] holds put target [0, LAT_MAX), get source [LAT_MAX, 2*LAT_MAX),
 * accumulate target (doubles) [2*LAT_MAX, 3*LAT_MAX) and the counter (a long) after. */
enum { PUT_LAT, GET_LAT, ACC_LAT, RMW_LAT, ATOMIC_LAT };
static long rmw_total, private_counter;
static long acc_count[2]; /* accumulations of 1.0 per ACC_SIZES entry */
static double scale_one = 1.0;
static double *acc_src;

static double lat_pass(int test, long size, long n)
{
    char *r = lat_base[1];
    if (size < 1 || size > LAT_MAX) die("latency size out of range");
    double t0 = now();
    switch (test) {
    case PUT_LAT:
        for (long i = 0; i < n; i++) CHECK(ARMCI_Put(src, r, (int)size, 1));
        break;
    case GET_LAT:
        for (long i = 0; i < n; i++) CHECK(ARMCI_Get(r + LAT_MAX, dst, (int)size, 1));
        break;
    case ACC_LAT:
        for (long i = 0; i < n; i++)
            CHECK(ARMCI_Acc(ARMCI_ACC_DBL, &scale_one, acc_src, r + 2 * LAT_MAX, (int)size, 1));
        break;
    case ATOMIC_LAT:
        for (long i = 0; i < n; i++) __atomic_fetch_add(&private_counter, 1, __ATOMIC_SEQ_CST);
        break;
    default:
        for (long i = 0; i < n; i++) {
            long old = -1;
            CHECK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, r + 3 * LAT_MAX, 1, 1));
            if (old != rmw_total + i) die("ARMCI_Rmw fetched a wrong value");
        }
    }
    double el = now() - t0;
    if (test == GET_LAT) {
        for (long i = 0; i < size; i++)
            if (dst[i] != pattern(i, 2)) die("ARMCI_Get returned wrong data");
        memset(dst, 0, (size_t)size);
    }
    if (test == ACC_LAT) acc_count[size == ACC_SIZES[0] ? 0 : 1] += n;
    if (test == RMW_LAT) rmw_total += n;
    return el / (double)n;
}

/* Checks the latency tests' remote effects: the last put's bytes, every accumulated double
 * (the first got both sizes' ones, the others the large size's; exact in a double) and the
 * counter. */
static void lat_check(void)
{
    char *r = lat_base[1];
    double got[LAT_MAX / 8];
    long cnt = -1;
    CHECK(ARMCI_Get(r, dst, LAT_MAX, 1));
    for (int i = 0; i < LAT_SIZES[0]; i++)
        if (dst[i] != pattern(i, 1)) die("ARMCI_Put left wrong data");
    CHECK(ARMCI_Get(r + 2 * LAT_MAX, got, LAT_MAX, 1));
    for (int i = 0; i < LAT_MAX / 8; i++) {
        double want = (double)acc_count[1] + (i < ACC_SIZES[0] / 8 ? (double)acc_count[0] : 0);
        if (i >= ACC_SIZES[1] / 8) want = 0;
        if (got[i] != want) die("ARMCI_Acc lost or miscounted an accumulation");
    }
    CHECK(ARMCI_Get(r + 3 * LAT_MAX, &cnt, sizeof cnt, 1));
    if (cnt != rmw_total) die("ARMCI_Rmw lost increments");
}

/* ---- strided 2-D: an n x n patch of doubles, rows 2n doubles apart on both sides */
enum { PUTS_BW, GETS_BW, COPY2D_BW };
static int n2d;

static double strided_pass(int test, long size, long n)
{
    int ld = 2 * n2d * 8, stride[1] = {ld}, count[2] = {n2d * 8, n2d};
    (void)size;
    double t0 = now();
    if (test == PUTS_BW) {
        for (long i = 0; i < n; i++) CHECK(ARMCI_PutS(src, stride, big_base[1], stride, count, 1, 1));
        ARMCI_Fence(1);
    } else if (test == GETS_BW) {
        for (long i = 0; i < n; i++) CHECK(ARMCI_GetS(big_base[1], stride, dst, stride, count, 1, 1));
    } else {
        for (long i = 0; i < n; i++) {
            for (int row = 0; row < n2d; row++)
                memcpy(dst + (long)row * ld, src + (long)row * ld, (size_t)n2d * 8);
            __asm__ volatile("" ::: "memory"); /* every copy happens */
        }
    }
    return (now() - t0) / (double)n;
}

/* After a strided size: the patch a put wrote reads back as src's bytes with the holes
 * still holding the fill (salt 3), and a get brings the patch and leaves dst's holes. */
static void strided_check(long rows, long ld)
{
    long bytes = rows * ld, row_bytes = (long)n2d * 8;
    if (bytes < 1 || bytes > BIG) die("strided check out of range");
    memset(dst, 0, (size_t)bytes);
    CHECK(ARMCI_Get(big_base[1], dst, (int)bytes, 1));
    for (long i = 0; i < bytes; i++) {
        int in = i % ld < row_bytes;
        if (dst[i] != (in ? pattern(i, 1) : pattern(i, 3))) die("ARMCI_PutS left wrong data");
    }
    int stride[1] = {(int)ld}, count[2] = {(int)row_bytes, n2d};
    memset(dst, 0, (size_t)bytes);
    CHECK(ARMCI_GetS(big_base[1], stride, dst, stride, count, 1, 1));
    for (long i = 0; i < bytes; i++) {
        int in = i % ld < row_bytes;
        if (dst[i] != (in ? pattern(i, 1) : 0)) die("ARMCI_GetS returned wrong data");
    }
}

/* ---- contiguous bandwidth */
enum { PUT_BW, GET_BW, MEMCPY_BW };

static double bw_pass(int test, long size, long n)
{
    double t0 = now();
    if (test == PUT_BW) {
        for (long i = 0; i < n; i++) CHECK(ARMCI_Put(src, big_base[1], (int)size, 1));
        ARMCI_Fence(1);
    } else if (test == GET_BW) {
        for (long i = 0; i < n; i++) CHECK(ARMCI_Get(big_base[1], dst, (int)size, 1));
    } else {
        for (long i = 0; i < n; i++) {
            memcpy(dst, src, (size_t)size);
            __asm__ volatile("" ::: "memory");
        }
    }
    return (now() - t0) / (double)n;
}

static void bw_check(long size)
{
    if (size < 1 || size > BIG) die("bandwidth size out of range");
    memset(dst, 0, (size_t)size);
    CHECK(ARMCI_Get(big_base[1], dst, (int)size, 1));
    for (long i = 0; i < size; i++)
        if (dst[i] != pattern(i, 1)) die("put/get bandwidth: wrong data");
}

/* Rank 1's block refilled with salt 3 (before each strided size: fresh holes). */
static void refill_remote(long bytes)
{
    for (long i = 0; i < bytes; i++) dst[i] = pattern(i, 3);
    CHECK(ARMCI_Put(dst, big_base[1], (int)bytes, 1));
    ARMCI_Fence(1);
}

static void row(const char *test, long size, double value, const char *unit)
{
    if (unit[0] == 'u')
        printf("%s,%s,%ld,%.3f,us\n", impl, test, size, value);
    else
        printf("%s,%s,%ld,%.0f,MB/s\n", impl, test, size, value);
    fflush(stdout);
}

static void run(long maxsize, int capped)
{
    static const char *LAT_NAMES[] = {"put_lat", "get_lat", "acc_lat", "rmw_lat", "atomic_lat"};
    static const char *S_NAMES[] = {"puts_bw", "gets_bw", "copy2d_bw"};
    static const char *BW_NAMES[] = {"put_bw", "get_bw", "memcpy_bw"};
    double v[3];
    for (int test = PUT_LAT; test <= RMW_LAT; test++) {
        const int *sizes = test == ACC_LAT ? ACC_SIZES : LAT_SIZES;
        int count = test == ACC_LAT ? 2 : test == RMW_LAT ? 1 : 3;
        for (int k = 0; k < count; k++) {
            long size = test == RMW_LAT ? 8 : sizes[k];
            if (size > maxsize && k > 0) break;
            /* Rmw beside the bare atomic, their passes taking turns */
            int both = test == RMW_LAT ? 2 : 1;
            measure(lat_pass, test, both, size, v);
            for (int t = 0; t < both; t++) row(LAT_NAMES[test + t], size, v[t] * 1e6, "us");
        }
    }
    lat_check();
    for (n2d = 8; n2d <= N2D_MAX; n2d *= 2) {
        long size = (long)n2d * n2d * 8, ld = 2L * n2d * 8;
        if (capped && size > maxsize && n2d > 8) break;
        refill_remote((long)n2d * ld);
        measure(strided_pass, PUTS_BW, 3, size, v);
        strided_check(n2d, ld);
        for (int t = 0; t < 3; t++) row(S_NAMES[t], size, (double)size / v[t] / 1e6, "MB/s");
    }
    for (unsigned k = 0; k < sizeof BW_SIZES / sizeof BW_SIZES[0]; k++) {
        long size = BW_SIZES[k];
        if (capped && size > maxsize && size > (64L << 10)) break;
        refill_remote(size);
        measure(bw_pass, PUT_BW, 3, size, v);
        bw_check(size);
        for (int t = 0; t < 3; t++) row(BW_NAMES[t], size, (double)size / v[t] / 1e6, "MB/s");
    }
}

int main(int argc, char **argv)
{
    long maxsize = BIG;
    int capped = 0, header = 0, outside = 0, opt;
#ifdef ARMCI_MPI
    MPI_Init(&argc, &argv);
#endif
    while ((opt = getopt(argc, argv, "i:t:r:m:s:HW")) != -1) {
        switch (opt) {
        case 'i': impl = optarg; break;
        case 't': target = atof(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'm': maxsize = atol(optarg); capped = 1; break;
        case 's': best = strcmp(optarg, "best") == 0; break;
        case 'H': header = 1; break;
        case 'W': outside = 1; break;
        default: fprintf(stderr, "usage: see the header of armci_bench.c\n"); return 1;
        }
    }
    if (reps < 1 || reps > MAX_REPS || target <= 0) {
        fprintf(stderr, "armci_bench: -r must be 1..%d and -t > 0\n", MAX_REPS);
        return 1;
    }
    ARMCI_Init_args(&argc, &argv);
    me = armci_msg_me();
    if (armci_msg_nproc() != 2) die("needs exactly 2 ranks");
    pin();
    int nproc = 2;
    lat_base = malloc(nproc * sizeof(void *));
    big_base = malloc(nproc * sizeof(void *));
    void *ps = NULL, *pd = NULL;
    /* page-aligned: glibc's memcpy runs far slower on this machine's AMD CPU when the
     * destination is 1-31 bytes past the source modulo 4096 (see shmem_lat.c) */
    if (!lat_base || !big_base || posix_memalign(&ps, 4096, BIG) || posix_memalign(&pd, 4096, BIG))
        die("out of memory");
    src = ps;
    dst = pd;
    CHECK(ARMCI_Malloc(lat_base, 4 * LAT_MAX));
    CHECK(ARMCI_Malloc(big_base, BIG));
    for (long i = 0; i < BIG; i++) {
        src[i] = pattern(i, 1);
        dst[i] = 0;
    }
    acc_src = malloc(LAT_MAX);
    if (!acc_src) die("out of memory");
    for (int i = 0; i < LAT_MAX / 8; i++) acc_src[i] = 1.0;
    {
        /* rank's own blocks: the get source, zeros elsewhere (ARMCI_Malloc does not clear) */
        unsigned char *l = lat_base[me];
        ARMCI_Access_begin(l);
        memset(l, 0, 4 * LAT_MAX);
        for (int i = 0; i < LAT_MAX; i++) l[LAT_MAX + i] = pattern(i, 2);
        ARMCI_Access_end(l);
    }
    ARMCI_Barrier();
    if (me == 0) {
        if (header) printf("impl,test,size,value,unit\n");
        run(maxsize, capped);
        if (outside) {
            int one = 1;
            CHECK(ARMCI_Put(&one, (char *)lat_base[1] + FLAG_OFF, sizeof one, 1));
            ARMCI_Fence(1);
        }
    } else if (outside) {
        /* -W: wait outside the library, asleep, for rank 0's flag */
        volatile int *flag = (volatile int *)((char *)lat_base[me] + FLAG_OFF);
        for (;;) {
            ARMCI_Access_begin(lat_base[me]);
            int done = *flag;
            ARMCI_Access_end(lat_base[me]);
            if (done) break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    ARMCI_Barrier();
    ARMCI_Free(big_base[me]);
    ARMCI_Free(lat_base[me]);
    free(src);
    free(dst);
    free(acc_src);
    ARMCI_Finalize();
#ifdef ARMCI_MPI
    MPI_Finalize();
#endif
    return 0;
}
