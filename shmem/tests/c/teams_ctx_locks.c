/* Teams (split_strided, my_pe, n_pes, translate_pe, sync, team collectives, destroy),
 * contexts (create, ctx RMA/AMO, fence/quiet, destroy) and locks (a critical section
 * that every PE enters repeatedly; test_lock). */
#include <shmem.h>
#include "check.h"

static long lock;          /* the lock lives in global memory, as in most programs */
static long counter;       /* protected by the lock, on PE 0 */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n);
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == n);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1);

    /* even PEs */
    shmem_team_t evens;
    int ne = (n + 1) / 2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, ne, NULL, 0, &evens) == 0);
    if (me % 2 == 0) {
        CHECK(evens != SHMEM_TEAM_INVALID);
        CHECK(shmem_team_my_pe(evens) == me / 2 && shmem_team_n_pes(evens) == ne);
        CHECK(shmem_team_translate_pe(evens, ne - 1, SHMEM_TEAM_WORLD) == 2 * (ne - 1));
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, evens) == me / 2);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_WORLD) == me);
    }
    long *v = shmem_calloc(8, sizeof(long)), *r = shmem_calloc(8, sizeof(long));
    v[0] = me;
    shmem_barrier_all();
    if (evens != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_sync(evens) == 0);
        CHECK(shmem_long_sum_reduce(evens, r, v, 1) == 0);
        long want = 0;
        for (int p = 0; p < n; p += 2) want += p;
        CHECK(r[0] == want);
        CHECK(shmem_long_broadcast(evens, r, v, 1, ne - 1) == 0);
        CHECK(r[0] == 2 * (ne - 1));
        CHECK(shmem_long_fcollect(evens, r, v, 1) == 0);
        for (int k = 0; k < ne; k++) CHECK(r[k] == 2 * k);
        shmem_ctx_t tctx;
        CHECK(shmem_team_create_ctx(evens, 0, &tctx) == 0);
        /* PE numbers on a team's context are the team's (§9.5.2) */
        shmem_ctx_long_p(tctx, &r[7], 5, shmem_team_my_pe(evens));
        shmem_ctx_quiet(tctx);
        CHECK(r[7] == 5);
        shmem_ctx_destroy(tctx);
        /* a split of a split: the first PE of the evens alone */
        shmem_team_t first;
        CHECK(shmem_team_split_strided(evens, 0, 1, 1, NULL, 0, &first) == 0);
        if (me == 0) {
            CHECK(first != SHMEM_TEAM_INVALID && shmem_team_n_pes(first) == 1);
            shmem_team_destroy(first);
        } else {
            CHECK(first == SHMEM_TEAM_INVALID);
        }
        shmem_team_destroy(evens);
    }
    CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0);
    /* an invalid triplet fails without a team */
    shmem_team_t bad;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &bad) != 0);
    CHECK(bad == SHMEM_TEAM_INVALID);

    /* contexts */
    shmem_ctx_t c1, c2;
    CHECK(shmem_ctx_create(0, &c1) == 0 && shmem_ctx_create(SHMEM_CTX_SERIALIZED, &c2) == 0);
    shmem_team_t ct;
    CHECK(shmem_ctx_get_team(c1, &ct) == 0 && ct == SHMEM_TEAM_WORLD);
    shmem_barrier_all();
    shmem_ctx_long_put(c1, &v[1], &v[0], 1, (me + 1) % n);
    shmem_ctx_fence(c1);
    shmem_ctx_long_atomic_add(c2, &v[2], 1, 0);
    shmem_ctx_quiet(c1);
    shmem_ctx_quiet(c2);
    shmem_barrier_all();
    CHECK(v[1] == (me + n - 1) % n);
    if (me == 0) CHECK(v[2] == n);
    CHECK(shmem_ctx_long_g(c2, &v[1], (me + 1) % n) == me);
    shmem_ctx_destroy(c1);
    shmem_ctx_destroy(c2);

    /* locks: a non-atomic read-modify-write made safe by the lock */
    for (int i = 0; i < 50; i++) {
        shmem_set_lock(&lock);
        long c = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, c + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(counter == 50L * n);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_test_lock(&lock) == 0); /* acquired */
        shmem_long_p(&v[3], 1, n - 1);
        shmem_quiet();
    }
    if (me == n - 1) {
        shmem_long_wait_until(&v[3], SHMEM_CMP_EQ, 1);
        if (n > 1) CHECK(shmem_test_lock(&lock) == 1); /* held by PE 0 */
    }
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&lock);
    shmem_barrier_all();
    shmem_free(r);
    shmem_free(v);
    shmem_finalize();
    return 0;
}
