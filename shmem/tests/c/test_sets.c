/* shmem_test_all/any/some, their _vector forms and wait_until_all/any/some(_vector) as
 * OpenSHMEM 1.5 §9.11 defines their results: nelems 0 (NULL ivars) or every element
 * excluded by status → all 1 / any SIZE_MAX / some 0, at once; nothing satisfied → a test
 * returns 0 / SIZE_MAX / 0 at once; the excluded elements are never reported. And the
 * test-suite pattern "put, then loop on a test" (SOS c11_shmem_test_all_any_some), which
 * spun for ever on the message path: the tests never sent the PE's own aggregated puts. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

static int iv[4];
static long lv[4];
static short sv;
static uint64_t uv;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    size_t idx[4] = {9, 9, 9, 9};
    int none[4] = {1, 1, 1, 1}, two[4] = {1, 0, 1, 0};
    int cmpv[4] = {5, 6, 7, 8};

    /* nelems 0, NULL ivars */
    CHECK(shmem_int_test_all(NULL, 0, NULL, SHMEM_CMP_EQ, 1) == 1);
    CHECK(shmem_int_test_any(NULL, 0, NULL, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_int_test_some(NULL, 0, idx, NULL, SHMEM_CMP_EQ, 1) == 0);
    CHECK(shmem_int_test_all_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL) == 1);
    CHECK(shmem_int_test_any_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL) == SIZE_MAX);
    CHECK(shmem_int_test_some_vector(NULL, 0, idx, NULL, SHMEM_CMP_EQ, NULL) == 0);
    shmem_int_wait_until_all(NULL, 0, NULL, SHMEM_CMP_EQ, 1);
    CHECK(shmem_int_wait_until_any(NULL, 0, NULL, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_int_wait_until_some(NULL, 0, idx, NULL, SHMEM_CMP_EQ, 1) == 0);
    shmem_int_wait_until_all_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL);
    CHECK(shmem_int_wait_until_any_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL) == SIZE_MAX);
    CHECK(shmem_int_wait_until_some_vector(NULL, 0, idx, NULL, SHMEM_CMP_EQ, NULL) == 0);

    /* every element excluded: the same results, even though nothing holds */
    CHECK(shmem_int_test_all(iv, 4, none, SHMEM_CMP_EQ, 1) == 1);
    CHECK(shmem_int_test_any(iv, 4, none, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_int_test_some(iv, 4, idx, none, SHMEM_CMP_EQ, 1) == 0);
    shmem_int_wait_until_all(iv, 4, none, SHMEM_CMP_EQ, 1);
    CHECK(shmem_int_wait_until_any(iv, 4, none, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_int_wait_until_some(iv, 4, idx, none, SHMEM_CMP_EQ, 1) == 0);
    CHECK(shmem_int_wait_until_any_vector(iv, 4, none, SHMEM_CMP_EQ, cmpv) == SIZE_MAX);

    /* nothing satisfied: a test answers at once */
    CHECK(shmem_int_test_all(iv, 4, NULL, SHMEM_CMP_EQ, 1) == 0);
    CHECK(shmem_int_test_any(iv, 4, NULL, SHMEM_CMP_EQ, 1) == SIZE_MAX);
    CHECK(shmem_int_test_some(iv, 4, idx, NULL, SHMEM_CMP_EQ, 1) == 0);
    CHECK(shmem_int_test_all_vector(iv, 4, NULL, SHMEM_CMP_EQ, cmpv) == 0);
    CHECK(shmem_int_test_any_vector(iv, 4, NULL, SHMEM_CMP_EQ, cmpv) == SIZE_MAX);
    CHECK(shmem_int_test_some_vector(iv, 4, idx, NULL, SHMEM_CMP_EQ, cmpv) == 0);

    /* excluded elements are never reported: iv = {5, 6, 7, 8} satisfies all of cmpv */
    for (int i = 0; i < 4; i++) iv[i] = cmpv[i];
    CHECK(shmem_int_test_any_vector(iv, 4, two, SHMEM_CMP_EQ, cmpv) == 1);
    CHECK(shmem_int_test_some_vector(iv, 4, idx, two, SHMEM_CMP_EQ, cmpv) == 2);
    CHECK(idx[0] == 1 && idx[1] == 3);
    CHECK(shmem_int_test_all_vector(iv, 4, two, SHMEM_CMP_EQ, cmpv) == 1);
    iv[0] = 0; /* excluded: does not spoil "all" */
    CHECK(shmem_int_test_all(iv, 4, two, SHMEM_CMP_GE, 6) == 1);
    CHECK(shmem_int_test_all(iv, 4, NULL, SHMEM_CMP_GE, 6) == 0);
    CHECK(shmem_int_wait_until_any(iv, 4, two, SHMEM_CMP_GT, 6) == 3);
    CHECK(shmem_int_wait_until_some(iv, 4, idx, two, SHMEM_CMP_GE, 6) == 2);
    shmem_barrier_all();

    /* put, then loop on a test (no other library call in the loop) */
    for (int round = 0; round < 3; round++) {
        shmem_long_p(&lv[round], me + 1, right);
        int st[4] = {0, 0, 0, 0};
        if (round == 0)
            while (!shmem_long_test_all(&lv[0], 1, st, SHMEM_CMP_NE, 0)) ;
        if (round == 1)
            while (shmem_long_test_any(&lv[1], 1, st, SHMEM_CMP_NE, 0) == SIZE_MAX) ;
        if (round == 2)
            while (!shmem_long_test_some(&lv[2], 1, idx, st, SHMEM_CMP_NE, 0)) ;
        CHECK(lv[round] == left + 1);
    }
    shmem_short_p(&sv, (short)(me + 1), right);
    while (!shmem_short_test(&sv, SHMEM_CMP_NE, 0)) ;
    CHECK(sv == left + 1);
    shmem_uint64_p(&uv, (uint64_t)me + 1, right);
    while (!shmem_uint64_test_all_vector(&uv, 1, NULL, SHMEM_CMP_NE, &(uint64_t){0})) ;
    CHECK(uv == (uint64_t)left + 1);
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
