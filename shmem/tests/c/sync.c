/* Ordering and point-to-point synchronization: fence/quiet (data before flag),
 * wait_until/test and the _all/_any/_some(_vector) forms, signals, the deprecated
 * shmem_wait, flags in global variables, generic selection. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

static long gflag;               /* a flag in global memory, as benchmarks keep it */
static uint64_t gsig;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *data = shmem_calloc(1024, sizeof(long));
    int *flags = shmem_calloc(8, sizeof(int));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    shmem_barrier_all();

    /* data then fence then flag: the flag's reader sees the data */
    for (int round = 1; round <= 50; round++) {
        for (int i = 0; i < 1024; i++) data[i] = 0;
        long v[1024];
        for (int i = 0; i < 1024; i++) v[i] = round * 10000 + me * 1000 + i;
        shmem_barrier_all();
        shmem_long_put(data, v, 1024, right);
        shmem_fence();
        shmem_long_atomic_set(&gflag, round, right);
        shmem_long_wait_until(&gflag, SHMEM_CMP_EQ, round);
        for (int i = 0; i < 1024; i += 97) CHECK(data[i] == round * 10000 + left * 1000 + i);
        CHECK(data[1023] == round * 10000 + left * 1000 + 1023);
    }
    shmem_barrier_all();

    /* quiet completes puts: after quiet + a flag put, data is there */
    shmem_long_p(&data[0], 4242, right);
    shmem_quiet();
    shmem_int_p(&flags[0], 1, right);
    shmem_int_wait_until(&flags[0], SHMEM_CMP_NE, 0);
    CHECK(data[0] == 4242);
    CHECK(shmem_int_test(&flags[0], SHMEM_CMP_EQ, 1) == 1);
    CHECK(shmem_int_test(&flags[0], SHMEM_CMP_GT, 1) == 0);
    shmem_barrier_all();

    /* comparisons */
    flags[1] = 5;
    CHECK(shmem_int_test(&flags[1], SHMEM_CMP_GE, 5) && shmem_int_test(&flags[1], SHMEM_CMP_LE, 5));
    CHECK(shmem_int_test(&flags[1], SHMEM_CMP_LT, 6) && !shmem_int_test(&flags[1], SHMEM_CMP_LT, 5));
    CHECK(shmem_test(&flags[1], SHMEM_CMP_GT, -1)); /* signed compare */
    unsigned int *uf = (unsigned int *)&flags[1];
    CHECK(!shmem_uint_test(uf, SHMEM_CMP_GT, (unsigned int)-1)); /* unsigned compare */
    shmem_barrier_all();

    /* _all / _any / _some over flags[2..6): the right neighbour sets them one by one */
    int *fl = &flags[2];
    int status[4] = {0, 0, 1, 0}; /* index 2 excluded */
    shmem_barrier_all();
    shmem_int_p(&fl[3], 1, right);
    shmem_quiet();
    size_t idx = shmem_int_wait_until_any(fl, 4, status, SHMEM_CMP_EQ, 1);
    CHECK(idx == 3);
    CHECK(shmem_int_test_any(fl, 4, status, SHMEM_CMP_EQ, 1) == 3);
    CHECK(shmem_int_test_all(fl, 4, status, SHMEM_CMP_EQ, 1) == 0);
    shmem_barrier_all();
    shmem_int_p(&fl[0], 1, right);
    shmem_int_p(&fl[1], 1, right);
    shmem_quiet();
    shmem_int_wait_until_all(fl, 4, status, SHMEM_CMP_EQ, 1);
    size_t ind[4];
    size_t k = shmem_int_wait_until_some(fl, 4, ind, status, SHMEM_CMP_EQ, 1);
    CHECK(k == 3 && ind[0] == 0 && ind[1] == 1 && ind[2] == 3);
    CHECK(shmem_int_test_some(fl, 4, ind, NULL, SHMEM_CMP_EQ, 0) == 1 && ind[0] == 2);
    int want[4] = {1, 1, 0, 1};
    shmem_int_wait_until_all_vector(fl, 4, NULL, SHMEM_CMP_EQ, want);
    CHECK(shmem_int_test_all_vector(fl, 4, NULL, SHMEM_CMP_EQ, want) == 1);
    CHECK(shmem_int_test_any_vector(fl, 4, NULL, SHMEM_CMP_NE, want) == SIZE_MAX);
    CHECK(shmem_int_test_some_vector(fl, 4, ind, NULL, SHMEM_CMP_EQ, want) == 4);
    size_t all_excl = shmem_int_wait_until_any(fl, 1, (int[]){1}, SHMEM_CMP_EQ, 99);
    CHECK(all_excl == SIZE_MAX);
    shmem_barrier_all();

    /* signals: put with signal add/set, signal_fetch, signal_wait_until */
    long src[16];
    for (int i = 0; i < 16; i++) src[i] = me * 100 + i;
    shmem_long_put_signal(&data[100], src, 16, sig, 1, SHMEM_SIGNAL_ADD, right);
    uint64_t s = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    CHECK(s == 1 && data[115] == left * 100 + 15);
    shmem_barrier_all();
    shmem_putmem_signal(&data[200], src, sizeof src, &gsig, 7, SHMEM_SIGNAL_SET, right);
    shmem_putmem_signal_nbi(&data[300], src, sizeof src, sig, 2, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(&gsig, SHMEM_CMP_EQ, 7);
    shmem_signal_wait_until(sig, SHMEM_CMP_GE, 3);
    CHECK(shmem_signal_fetch(&gsig) == 7 && shmem_signal_fetch(sig) == 3);
    CHECK(data[200] == left * 100 && data[315] == left * 100 + 15);
    shmem_barrier_all();

    /* deprecated wait and generic wait_until on a global */
    if (me == 0) shmem_long_p(&gflag, -1, right);
    if (me == right % n && n > 1) { /* nothing */ }
    shmem_barrier_all();
    if (me == 1 % n) {
        shmem_long_wait(&gflag, 50);
        CHECK(gflag == (n > 1 ? -1 : 50));
    }
    shmem_barrier_all();
    shmem_long_atomic_set(&gflag, 3, right);
    shmem_wait_until(&gflag, SHMEM_CMP_EQ, 3L);
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(flags);
    shmem_free(data);
    shmem_finalize();
    return 0;
}
