/* The allocation calls' corner cases (OpenSHMEM 1.5 §9.3), as third-party test suites use
 * them: zero sizes return NULL (and malloc/align/free(NULL) perform no action, not even a
 * barrier), alignments that are not a power of two return NULL, realloc(NULL, n) allocates
 * and realloc(p, 0) frees, the legacy names behave the same. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    CHECK(shmem_malloc(0) == NULL);
    CHECK(shmalloc(0) == NULL);
    CHECK(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL);
    CHECK(shmem_align(64, 0) == NULL);
    CHECK(shmemalign(64, 0) == NULL);
    CHECK(shmem_calloc(0, sizeof(int)) == NULL);
    CHECK(shmem_calloc(16, 0) == NULL);
    CHECK(shmem_calloc(0, 0) == NULL);
    CHECK(shmem_align(3 * sizeof(void *), 64) == NULL); /* not a power of two */
    CHECK(shmemalign(0, 64) == NULL);
    CHECK(shmemalign(4097, 64) == NULL);

    /* "no action": a free(NULL) or malloc(0) on one PE only must not be a barrier, or the
     * barriers below would pair up wrongly and the job hang */
    if (me == 0) {
        shmem_free(NULL);
        shfree(NULL);
        CHECK(shmem_malloc(0) == NULL);
    }
    shmem_barrier_all();

    /* odd sizes and small powers of two work and are symmetric */
    char *odd = shmem_malloc(1);
    char *odd3 = shmem_align(sizeof(void *), 3);
    long *al = shmem_align(4096, 5 * sizeof(long));
    CHECK(odd && odd3 && al && ((uintptr_t)al % 4096) == 0);
    /* beyond a page: aligned, or NULL on every PE (the heap's mappings decide) */
    void *big_al = shmem_align(1 << 21, 8);
    CHECK(big_al == NULL || ((uintptr_t)big_al % (1 << 21)) == 0);
    int got = big_al != NULL, all_got = 0;
    static int got_sym;
    got_sym = got;
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++) all_got += shmem_int_g(&got_sym, pe);
    CHECK(all_got == 0 || all_got == n);
    shmem_free(big_al);
    CHECK(((uintptr_t)odd3 % sizeof(void *)) == 0 && ((uintptr_t)odd % 8) == 0);
    *odd = (char)me;
    shmem_barrier_all();
    CHECK(shmem_char_g(odd, (me + 1) % n) == (char)((me + 1) % n));
    al[4] = me;
    shmem_long_p(&al[0], me, (me + 1) % n);
    shmem_barrier_all();
    CHECK(al[0] == (me + n - 1) % n && al[4] == me);

    /* realloc: NULL → allocate; contents kept on growth and on shrinking; 0 → free */
    int *r = shmem_realloc(NULL, 10 * sizeof(int));
    CHECK(r != NULL);
    for (int i = 0; i < 10; i++) r[i] = me * 100 + i;
    r = shmem_realloc(r, 1000 * sizeof(int));
    CHECK(r != NULL);
    for (int i = 0; i < 10; i++) CHECK(r[i] == me * 100 + i);
    r = shrealloc(r, 4 * sizeof(int));
    CHECK(r != NULL);
    for (int i = 0; i < 4; i++) CHECK(r[i] == me * 100 + i);
    CHECK(shmem_realloc(r, 0) == NULL);
    int *lr = shrealloc(NULL, 8);
    CHECK(lr != NULL);
    CHECK(shrealloc(lr, 0) == NULL);
    /* realloc(p, 0) really freed: 600 MiB through a 512 MiB heap */
    for (int i = 0; i < 600; i++) {
        char *b = shmem_malloc(1 << 20);
        CHECK(b != NULL);
        b[(1 << 20) - 1] = 1;
        CHECK(shmem_realloc(b, 0) == NULL);
    }
    /* calloc zeroes odd sizes and is symmetric */
    short *z = shmem_calloc(7, sizeof(short));
    CHECK(z != NULL);
    for (int i = 0; i < 7; i++) CHECK(z[i] == 0);
    shmem_barrier_all();
    shmem_short_p(&z[6], (short)(me + 1), (me + 1) % n);
    shmem_barrier_all();
    CHECK(z[6] == (short)((me + n - 1) % n + 1));

    shmem_free(z);
    shmem_free(al);
    shfree(odd3);
    shmem_free(odd);
    shmem_finalize();
    return 0;
}
