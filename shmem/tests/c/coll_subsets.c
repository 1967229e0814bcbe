/* Collectives with zero elements (NULL buffers, as SOS's nop_collectives and zero_comm
 * do) and on active sets and teams that hold only some PEs, the PEs outside not calling
 * (SOS's broadcast_active_set / collect_active_set style: shrinking sets, each PE takes
 * part only in the sets that contain it, so the PEs' call sequences differ). */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSyncB[2][SHMEM_BARRIER_SYNC_SIZE];
static int pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int64_t src[8], dst[8 * 64];
static int isrc[4], idst[4];

int main(void) {
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) pSyncB[0][i] = pSyncB[1][i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= 64);

    /* zero elements, NULL buffers: nothing moves, nothing fails */
    CHECK(shmem_int_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0) == 0);
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, n - 1) == 0);
    CHECK(shmem_int_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_int_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0) == 0);
    CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0) == 0);
    CHECK(shmem_collectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_fcollectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_alltoallmem(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_alltoallsmem(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0) == 0);
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_double_max_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    CHECK(shmem_ulong_xor_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0);
    shmem_broadcast32(NULL, NULL, 0, 0, 0, 0, n, pSync);
    shmem_broadcast64(NULL, NULL, 0, 0, 0, 0, n, pSync);
    shmem_fcollect32(NULL, NULL, 0, 0, 0, n, pSync);
    shmem_collect64(NULL, NULL, 0, 0, 0, n, pSync);
    shmem_alltoall32(NULL, NULL, 0, 0, 0, n, pSync);
    shmem_alltoalls64(NULL, NULL, 1, 1, 0, 0, 0, n, pSync);
    shmem_int_and_to_all(NULL, NULL, 0, 0, 0, n, pWrk, pSync);
    shmem_int_prod_to_all(NULL, NULL, 0, 0, 0, n, pWrk, pSync);
    /* zero-length RMA with NULL (zero_comm) */
    shmem_putmem(NULL, NULL, 0, 0);
    shmem_getmem(NULL, NULL, 0, 0);
    shmem_putmem_nbi(NULL, NULL, 0, 0);
    shmem_getmem_nbi(NULL, NULL, 0, 0);
    shmem_int_iget(NULL, NULL, 1, 1, 0, 0);
    shmem_int_iput(NULL, NULL, 1, 1, 0, 0);
    shmem_quiet();
    /* zero elements from a real buffer leave it alone */
    for (int i = 0; i < 8; i++) { src[i] = me; dst[i] = -1; }
    shmem_barrier_all();
    CHECK(shmem_int64_broadcast(SHMEM_TEAM_WORLD, dst, src, 0, 0) == 0);
    CHECK(shmem_int64_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 0) == 0);
    for (int i = 0; i < 8; i++) CHECK(dst[i] == -1);
    shmem_barrier_all();

    /* shrinking legacy active sets PEs i..n-1: PE me calls only sets i <= me */
    for (int i = 0; i <= me; i++) {
        int size = n - i;
        for (int k = 0; k < 8; k++) dst[k] = -1;
        shmem_broadcast64(dst, src, 8, 0, i, 0, size, pSync);
        for (int k = 0; k < 8; k++) CHECK(dst[k] == (me == i ? -1 : i));
        shmem_barrier(i, 0, size, pSyncB[i % 2]);
        shmem_fcollect64(dst, src, 1, i, 0, size, pSync);
        for (int p = 0; p < size; p++) CHECK(dst[p] == i + p);
        shmem_barrier(i, 0, size, pSyncB[i % 2]);
        isrc[0] = me;
        shmem_int_sum_to_all(idst, isrc, 1, i, 0, size, pWrk, pSync);
        CHECK(idst[0] == (i + n - 1) * size / 2);
        shmem_int_max_to_all(NULL, NULL, 0, i, 0, size, pWrk, pSync); /* zero on a subset */
        shmem_barrier(i, 0, size, pSyncB[i % 2]);
    }
    shmem_barrier_all();

    /* a strided active set missing PE 0: odd PEs (start 1, stride 2) */
    if (me % 2 == 1) {
        int size = n / 2;
        shmem_fcollect64(dst, src, 1, 1, 1, size, pSync);
        for (int p = 0; p < size; p++) CHECK(dst[p] == 1 + 2 * p);
        shmem_sync(1, 1, size, pSyncB[0]);
        shmem_alltoall64(dst, src, 1, 1, 1, size, pSync);
        for (int p = 0; p < size; p++) CHECK(dst[p] == 1 + 2 * p);
        shmem_barrier(1, 1, size, pSyncB[1]);
    }
    shmem_barrier_all();

    /* shrinking teams, never destroyed (as SOS's test does) and then destroyed */
    for (int i = 0; i < n; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, i, 1, n - i, NULL, 0, &t) == 0);
        CHECK((t != SHMEM_TEAM_INVALID) == (me >= i));
        if (t != SHMEM_TEAM_INVALID) {
            for (int k = 0; k < 8; k++) dst[k] = -1;
            CHECK(shmem_int64_broadcast(t, dst, src, 8, 0) == 0);
            for (int k = 0; k < 8; k++) CHECK(dst[k] == i);
            CHECK(shmem_int64_collect(t, dst, src, me == i ? 0 : 1) == 0);
            for (int p = 0; p < n - i - 1; p++) CHECK(dst[p] == i + 1 + p);
            CHECK(shmem_int_sum_reduce(t, NULL, NULL, 0) == 0);
            CHECK(shmem_int64_alltoall(t, NULL, NULL, 0) == 0);
            shmem_team_sync(t);
            if (i % 2) shmem_team_destroy(t);
        }
        shmem_barrier_all();
    }
    shmem_finalize();
    return 0;
}
