/* The profiling interface's names (pshmem.h): a program written against the pshmem_
 * entry points links (shared and static) and works — setup, heap, untyped and typed RMA,
 * atomics, a collective, the legacy names. */
#include <pshmem.h>
#include "check.h"

int main(void) {
    pshmem_init();
    int me = pshmem_my_pe(), n = pshmem_n_pes();
    CHECK(me == p_my_pe() && n == p_num_pes() && me == shmem_my_pe());
    long *a = pshmem_malloc(4 * sizeof(long));
    int *b = pshmalloc(2 * sizeof(int));
    CHECK(a != NULL && b != NULL);
    long v = me + 100;
    pshmem_putmem(&a[0], &v, sizeof v, (me + 1) % n);
    pshmem_long_put(&a[1], &v, 1, (me + 1) % n);
    pshmem_int_p(&b[0], me, (me + 1) % n);
    pshmem_quiet();
    pshmem_barrier_all();
    int left = (me + n - 1) % n;
    CHECK(a[0] == left + 100 && a[1] == left + 100 && b[0] == left);
    long got = 0;
    pshmem_getmem(&got, &a[0], sizeof got, (me + 1) % n);
    CHECK(got == me + 100 && pshmem_long_g(&a[1], (me + 1) % n) == me + 100);
    a[2] = 0;
    pshmem_barrier_all();
    pshmem_long_atomic_add(&a[2], 1, 0);
    CHECK(pshmem_long_atomic_fetch_add(&a[2], 0, 0) >= 1);
    pshmem_barrier_all();
    if (me == 0) CHECK(a[2] == n);
    a[3] = me;
    CHECK(pshmem_long_sum_reduce(SHMEM_TEAM_WORLD, &a[3], &a[3], 1) == 0);
    CHECK(a[3] == (long)n * (n - 1) / 2);
    pshfree(b);
    pshmem_free(a);
    pshmem_finalize();
    return 0;
}
