/* A profiling tool in the program (OpenSHMEM 1.5 §10.1): it defines shmem_putmem,
 * shmem_barrier_all and skifshmem_put (the entry point behind every typed put), counts
 * the calls and forwards them to the pshmem_/pskifshmem_ names; with the shared library the
 * program's calls reach the wrappers and the wrappers reach the library. */
#include <pshmem.h>
#include "check.h"

static long putmems, barriers, typed;

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    putmems++;
    pshmem_putmem(dest, source, nelems, pe);
}
void shmem_barrier_all(void) {
    barriers++;
    pshmem_barrier_all();
}
void skifshmem_put(const char *call, shmem_ctx_t ctx, void *dest, const void *src, size_t bytes,
                   int pe) {
    typed++;
    pskifshmem_put(call, ctx, dest, src, bytes, pe);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *a = shmem_malloc(16 * sizeof(long));
    CHECK(a != NULL);
    long before = barriers;
    for (long i = 0; i < 10; i++) shmem_putmem(&a[i], &i, sizeof i, right);
    long v = 1000 + me;
    shmem_long_put(&a[10], &v, 1, right);
    shmem_int_p((int *)&a[11], me, right);
    shmem_barrier_all();
    CHECK(putmems == 10 && typed == 2 && barriers == before + 1);
    for (long i = 0; i < 10; i++) CHECK(a[i] == i);
    CHECK(a[10] == 1000 + left && *(int *)&a[11] == left);
    shmem_free(a);
    shmem_finalize();
    return 0;
}
