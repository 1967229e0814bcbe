/* Collectives on the world team and the legacy active-set forms: barrier_all/sync_all,
 * broadcast, collect, fcollect, alltoall(s), every reduction operator, pSync/pWrk
 * arrays kept in global memory as benchmarks do. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSync2[SHMEM_BCAST_SYNC_SIZE];
static int pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double dWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync2[i] = _SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_sync_all();

    /* broadcast: team form updates the root too; legacy form leaves the root alone */
    long *src = shmem_malloc(16 * sizeof(long));
    long *dst = shmem_malloc(16 * n * sizeof(long));
    for (int i = 0; i < 16; i++) { src[i] = me * 100 + i; dst[i] = -1; }
    shmem_barrier_all();
    int root = n - 1;
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 16, root) == 0);
    for (int i = 0; i < 16; i++) CHECK(dst[i] == root * 100 + i);
    for (int i = 0; i < 16; i++) dst[i] = -1;
    shmem_barrier_all();
    shmem_broadcast64(dst, src, 16, 0, 0, 0, n, pSync2);
    for (int i = 0; i < 16; i++) CHECK(dst[i] == (me == 0 ? -1 : i));
    shmem_broadcast(SHMEM_TEAM_WORLD, dst, src, 2, 0);
    CHECK(dst[1] == 1);

    /* fcollect / collect (variable sizes: PE p contributes p+1 elements) */
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, 4) == 0);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 4; i++) CHECK(dst[p * 4 + i] == p * 100 + i);
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1) == 0);
    int at = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i <= p; i++) CHECK(dst[at++] == p * 100 + i);
    int32_t *s32 = shmem_malloc(4 * sizeof(int32_t)), *d32 = shmem_malloc(4 * n * sizeof(int32_t));
    for (int i = 0; i < 4; i++) s32[i] = me * 10 + i;
    shmem_barrier_all();
    shmem_fcollect32(d32, s32, 2, 0, 0, n, pSync);
    for (int p = 0; p < n; p++) CHECK(d32[2 * p] == p * 10 && d32[2 * p + 1] == p * 10 + 1);
    shmem_collect32(d32, s32, (size_t)(me % 2) + 1, 0, 0, n, pSync);
    CHECK(d32[0] == 0);
    CHECK(shmem_fcollectmem(SHMEM_TEAM_WORLD, d32, s32, 4) == 0);
    CHECK(d32[n - 1] == (n - 1) * 10);

    /* alltoall(s) */
    long *a2s = shmem_malloc(2 * n * sizeof(long)), *a2d = shmem_malloc(4 * n * sizeof(long));
    for (int j = 0; j < n; j++) { a2s[2 * j] = me * 1000 + j; a2s[2 * j + 1] = -(me * 1000 + j); }
    shmem_barrier_all();
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, a2d, a2s, 2) == 0);
    for (int j = 0; j < n; j++) CHECK(a2d[2 * j] == j * 1000 + me && a2d[2 * j + 1] == -(j * 1000 + me));
    shmem_alltoall64(a2d, a2s, 2, 0, 0, n, pSync);
    CHECK(a2d[0] == me && a2d[1] == -me);
    /* strided: take every 2nd source element, place every 2nd destination element */
    CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, a2d, a2s, 2, 2, 1) == 0);
    for (int j = 0; j < n; j++) CHECK(a2d[2 * j] == j * 1000 + me);
    shmem_alltoalls64(a2d, a2s, 2, 2, 1, 0, 0, n, pSync);
    CHECK(a2d[0] == me);

    /* reductions: every operator, team and legacy forms */
    int *is = shmem_malloc(4 * sizeof(int)), *id = shmem_malloc(4 * sizeof(int));
    is[0] = me + 1; is[1] = -me; is[2] = 1 << me; is[3] = 3;
    shmem_barrier_all();
    int sum = n * (n + 1) / 2, all = (1 << n) - 1;
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, id, is, 4) == 0);
    CHECK(id[0] == sum && id[1] == -(n * (n - 1) / 2) && id[2] == all && id[3] == 3 * n);
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, id, is, 2);
    CHECK(id[0] == n && id[1] == 0);
    shmem_int_min_reduce(SHMEM_TEAM_WORLD, id, is, 2);
    CHECK(id[0] == 1 && id[1] == -(n - 1));
    shmem_int_prod_reduce(SHMEM_TEAM_WORLD, id, is, 1);
    int fact = 1;
    for (int p = 1; p <= n; p++) fact *= p;
    CHECK(id[0] == fact);
    shmem_int_sum_to_all(id, is, 1, 0, 0, n, pWrk, pSync);
    CHECK(id[0] == sum);
    shmem_int_max_to_all(id, is, 1, 0, 0, n, pWrk, pSync);
    CHECK(id[0] == n);
    shmem_int_or_to_all(id, &is[2], 1, 0, 0, n, pWrk, pSync);
    CHECK(id[0] == all);
    shmem_int_and_to_all(id, &is[2], 1, 0, 0, n, pWrk, pSync);
    CHECK(id[0] == (n == 1 ? 1 : 0));
    shmem_int_xor_to_all(id, &is[3], 1, 0, 0, n, pWrk, pSync);
    CHECK(id[0] == (n % 2 ? 3 : 0));
    unsigned *us = (unsigned *)is, *ud = (unsigned *)id;
    shmem_uint_or_reduce(SHMEM_TEAM_WORLD, ud, &us[2], 1);
    CHECK(ud[0] == (unsigned)all);
    shmem_uint_and_reduce(SHMEM_TEAM_WORLD, ud, &us[2], 1);
    shmem_uint_xor_reduce(SHMEM_TEAM_WORLD, ud, &us[2], 1);
    CHECK(ud[0] == (unsigned)all);
    shmem_sum_reduce(SHMEM_TEAM_WORLD, id, is, 1);
    CHECK(id[0] == sum);
    /* in place (dest == source) */
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, is, is, 1);
    CHECK(is[0] == sum);

    double *ds = shmem_malloc(2 * sizeof(double)), *dd = shmem_malloc(2 * sizeof(double));
    ds[0] = 0.5 * me; ds[1] = me == 0 ? -3.0 : 1.0;
    shmem_barrier_all();
    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, dd, ds, 2);
    CHECK(dd[0] == 0.25 * n * (n - 1) && dd[1] == -3.0 + (n - 1));
    shmem_double_min_to_all(dd, ds, 2, 0, 0, n, dWrk, pSync);
    CHECK(dd[0] == 0.0 && dd[1] == -3.0);
    shmem_double_prod_to_all(dd, &ds[1], 1, 0, 0, n, dWrk, pSync);
    CHECK(dd[0] == -3.0);

    double _Complex *cs = shmem_malloc(sizeof(double _Complex)), *cd = shmem_malloc(sizeof(double _Complex));
    *cs = me + 1.0 * __extension__ 1.0i;
    shmem_barrier_all();
    shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 1);
    CHECK(__real__ *cd == n * (n - 1) / 2.0 && __imag__ *cd == n);

    /* an active set: every second PE (logPE_stride 1) */
    int half = (n + 1) / 2;
    if (me % 2 == 0) {
        shmem_barrier(0, 1, half, pSync);
        shmem_int_sum_to_all(id, &is[3], 1, 0, 1, half, pWrk, pSync);
        CHECK(id[0] == 3 * half);
        shmem_broadcast32(d32, s32, 1, half - 1, 0, 1, half, pSync2);
        if (me != 2 * (half - 1)) CHECK(d32[0] == (2 * (half - 1)) * 10);
    }
    shmem_barrier_all();
    shmem_free(cd); shmem_free(cs); shmem_free(dd); shmem_free(ds);
    shmem_free(id); shmem_free(is); shmem_free(a2d); shmem_free(a2s);
    shmem_free(d32); shmem_free(s32); shmem_free(dst); shmem_free(src);
    shmem_finalize();
    return 0;
}
