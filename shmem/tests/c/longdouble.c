/* long double reductions (shmem_longdouble_{sum,prod,min,max}_reduce and the legacy
 * _to_all forms) with values a double could not hold: each PE adds me·2⁻⁶⁰ to 1, which
 * rounds away in a double and stays in x86's 64-bit long double mantissa. */
#include <shmem.h>
#include "check.h"

static long double src[3], dst[3], inplace[3];
static long double pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long pSync[SHMEM_REDUCE_SYNC_SIZE];

static void fill(int me) {
    long double tiny = 1.0L / (1ULL << 60);
    src[0] = 1.0L + me * tiny;
    src[1] = (me % 2 ? -1.0L : 1.0L) * (me + 1);
    src[2] = 1.0L + 1.0L / (me + 2);
}

int main(void) {
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long double tiny = 1.0L / (1ULL << 60);
    long double sum0 = 0, sum1 = 0, prod2 = 1, min1 = 1e30L, max1 = -1e30L;
    for (int p = 0; p < n; p++) {
        sum0 += 1.0L + p * tiny;
        long double v = (p % 2 ? -1.0L : 1.0L) * (p + 1);
        sum1 += v;
        prod2 *= 1.0L + 1.0L / (p + 2);
        if (v < min1) min1 = v;
        if (v > max1) max1 = v;
    }
    fill(me);
    shmem_barrier_all();
    CHECK(shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 3) == 0);
    CHECK(dst[0] == sum0 && dst[1] == sum1);
    if (n > 1 && sizeof(long double) > sizeof(double)) CHECK(dst[0] != (long double)(double)dst[0]);
    CHECK(shmem_longdouble_prod_reduce(SHMEM_TEAM_WORLD, dst, src, 3) == 0);
    long double rel = (dst[2] - prod2) / prod2;
    CHECK(rel < 1e-17L && rel > -1e-17L); /* the order of products may differ */
    CHECK(shmem_longdouble_min_reduce(SHMEM_TEAM_WORLD, dst, src, 3) == 0);
    CHECK(dst[0] == 1.0L && dst[1] == min1);
    CHECK(shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, dst, src, 3) == 0);
    CHECK(dst[0] == 1.0L + (n - 1) * tiny && dst[1] == max1);
    /* in place, and zero elements */
    for (int i = 0; i < 3; i++) inplace[i] = src[i];
    CHECK(shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, inplace, inplace, 3) == 0);
    CHECK(inplace[0] == sum0);
    CHECK(shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);

    /* legacy forms on the world and on an active set (every second PE) */
    shmem_longdouble_sum_to_all(dst, src, 2, 0, 0, n, pWrk, pSync);
    CHECK(dst[0] == sum0 && dst[1] == sum1);
    shmem_barrier_all();
    shmem_longdouble_min_to_all(dst, src, 2, 0, 0, n, pWrk, pSync);
    CHECK(dst[1] == min1);
    shmem_barrier_all();
    if (me % 2 == 0) {
        int half = (n + 1) / 2;
        long double s = 0;
        for (int p = 0; p < n; p += 2) s += 1.0L + p * tiny;
        shmem_longdouble_sum_to_all(dst, src, 1, 0, 1, half, pWrk, pSync);
        CHECK(dst[0] == s);
        shmem_longdouble_prod_to_all(dst, src, 1, 0, 1, half, pWrk, pSync);
        shmem_longdouble_max_to_all(dst, src, 1, 0, 1, half, pWrk, pSync);
        CHECK(dst[0] == 1.0L + (n - 1 - (n - 1) % 2) * tiny);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
