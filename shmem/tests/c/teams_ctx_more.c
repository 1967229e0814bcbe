/* Teams and contexts beyond teams_ctx_locks.c: the SHMEM_TEAM_NUM_CONTEXTS option reads
 * back; a context made from a team numbers PEs within the team (RMA and atomics on it),
 * knows its team and quiets; the SHMEM_CTX_INVALID / SHMEM_TEAM_INVALID corners; teams
 * created and destroyed thousands of times; shmem_team_split_2d. */
#include <shmem.h>
#include "check.h"

static long landed = -1, counter;
static int vals[4], sums[4];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_config_t cfg = {.num_contexts = 3}, got = {.num_contexts = -7};

    /* the num_contexts option */
    CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0);
    CHECK(got.num_contexts == 0);
    shmem_team_t rest; /* PEs 1..n-1, or none with 1 PE */
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, &cfg,
                                      SHMEM_TEAM_NUM_CONTEXTS, &rest);
    CHECK(rc == 0 && (rest == SHMEM_TEAM_INVALID) == (me == 0));
    if (rest != SHMEM_TEAM_INVALID) {
        got.num_contexts = -7;
        CHECK(shmem_team_get_config(rest, 0, &got) == 0 && got.num_contexts == -7);
        CHECK(shmem_team_get_config(rest, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0);
        CHECK(got.num_contexts == 3);
    }
    CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &got) != 0);

    /* a team's context: PE numbers are the team's */
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    rc = shmem_team_create_ctx(rest, 0, &ctx);
    shmem_team_t back = SHMEM_TEAM_WORLD;
    if (rest == SHMEM_TEAM_INVALID) {
        CHECK(rc != 0 && ctx == SHMEM_CTX_INVALID);
        CHECK(shmem_ctx_get_team(ctx, &back) != 0 && back == SHMEM_TEAM_INVALID);
        shmem_ctx_quiet(ctx); /* no operation on SHMEM_CTX_INVALID */
        shmem_ctx_fence(ctx);
    } else {
        CHECK(rc == 0 && ctx != SHMEM_CTX_INVALID);
        CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == rest);
        int tn = shmem_team_n_pes(rest), tme = shmem_team_my_pe(rest);
        /* team PE (tme+1)%tn is world PE (tme+1)%tn + 1 */
        shmem_ctx_long_p(ctx, &landed, me, (tme + 1) % tn);
        shmem_ctx_long_atomic_add(ctx, &counter, 1, 0); /* team PE 0: world PE 1 */
        shmem_ctx_quiet(ctx);
    }
    shmem_barrier_all();
    if (me > 0) {
        int tn = n - 1, tme = me - 1;
        CHECK(landed == (tme + tn - 1) % tn + 1);
    } else {
        CHECK(landed == -1);
    }
    CHECK(counter == (me == 1 ? n - 1 : 0));
    shmem_ctx_destroy(ctx); /* SHMEM_CTX_INVALID on PE 0: no operation */
    shmem_ctx_t wctx;
    CHECK(shmem_ctx_create(0, &wctx) == 0);
    CHECK(shmem_ctx_get_team(wctx, &back) == 0 && back == SHMEM_TEAM_WORLD);
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &back) == 0 && back == SHMEM_TEAM_WORLD);
    shmem_ctx_destroy(wctx);
    shmem_team_destroy(rest);

    /* created and destroyed over and over, with a collective and a context each time */
    for (int i = 0; i < 3000; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0);
        CHECK(t != SHMEM_TEAM_INVALID);
        shmem_ctx_t c;
        CHECK(shmem_team_create_ctx(t, 0, &c) == 0);
        shmem_ctx_int_p(c, &vals[0], i, (shmem_team_my_pe(t) + 1) % n);
        shmem_ctx_quiet(c);
        shmem_ctx_destroy(c);
        if (i % 100 == 0) {
            shmem_team_sync(t);
            CHECK(vals[0] == i);
        }
        shmem_team_destroy(t);
    }
    shmem_barrier_all();

    /* split_2d: rows of 2 */
    shmem_team_t xt, yt;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &xt, NULL, 0,
                              &yt) == 0);
    CHECK(shmem_team_my_pe(xt) == me % 2 && shmem_team_my_pe(yt) == me / 2);
    int rows = (n + 1) / 2;
    CHECK(shmem_team_n_pes(xt) == (me / 2 < n / 2 ? (n < 2 ? 1 : 2) : 1));
    CHECK(shmem_team_n_pes(yt) == (me % 2 == 0 ? rows : n / 2));
    CHECK(shmem_team_translate_pe(xt, 0, SHMEM_TEAM_WORLD) == me - me % 2);
    CHECK(shmem_team_translate_pe(yt, 0, SHMEM_TEAM_WORLD) == me % 2);
    CHECK(shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3);
    vals[1] = me;
    CHECK(shmem_int_sum_reduce(xt, &sums[1], &vals[1], 1) == 0);
    int row = 0;
    for (int p = me - me % 2; p < n && p < me - me % 2 + 2; p++) row += p;
    CHECK(sums[1] == row);
    CHECK(shmem_int_sum_reduce(yt, &sums[2], &vals[1], 1) == 0);
    int col = 0;
    for (int p = me % 2; p < n; p += 2) col += p;
    CHECK(sums[2] == col);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    /* xrange beyond the team: one row */
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, n + 5, NULL, 0, &xt, NULL, 0, &yt) == 0);
    CHECK(shmem_team_n_pes(xt) == n && shmem_team_n_pes(yt) == 1 && shmem_team_my_pe(xt) == me);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &xt, NULL, 0, &yt) != 0);
    CHECK(xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID);
    shmem_finalize();
    return 0;
}
