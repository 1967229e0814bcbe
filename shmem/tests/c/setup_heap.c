/* Setup calls and the symmetric heap: init/finalize, my_pe/n_pes, accessibility, shmem_ptr,
 * info, malloc/calloc/realloc/align/free and the legacy names, globals are symmetric. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: %s:%d: check failed: %s\n", shmem_my_pe(), __FILE__, __LINE__, #c); exit(2); } } while (0)

static long global_counter;      /* .bss: symmetric */
static int global_table[8] = {1, 2, 3, 4, 5, 6, 7, 8}; /* .data: symmetric */

int main(void) {
    int major = 0, minor = 0, provided = -1;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    shmem_init(); /* a second init is allowed and does nothing */
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(me == _my_pe() && n == _num_pes());
    CHECK(n >= 1 && me >= 0 && me < n);
    /* MULTIPLE on the direct path; the message path serves SERIALIZED (README) */
    int level = shmemx_direct_access() == 1 ? SHMEM_THREAD_MULTIPLE : SHMEM_THREAD_SERIALIZED;
    CHECK(provided == level);
    shmem_query_thread(&provided);
    CHECK(provided == level);
    shmem_info_get_version(&major, &minor);
    CHECK(major == 1 && minor == 5 && SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5);
    CHECK(_SHMEM_MAJOR_VERSION == 1 && _SHMEM_MINOR_VERSION == 5);
    shmem_info_get_name(name);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0);
    CHECK(shmem_pe_accessible(n - 1) && !shmem_pe_accessible(n) && !shmem_pe_accessible(-1));

    long *a = shmem_malloc(100 * sizeof(long));
    CHECK(a != NULL);
    CHECK(shmem_addr_accessible(a, (me + 1) % n));
    CHECK(shmem_addr_accessible(&global_counter, 0));
    long local_var = 0;
    CHECK(!shmem_addr_accessible(&local_var, 0));
    for (int i = 0; i < 100; i++) a[i] = me * 1000 + i;
    shmem_barrier_all();
    long *peer = shmem_ptr(a, (me + 1) % n);
    if (shmemx_direct_access() == 1) {
        CHECK(peer != NULL && peer[5] == ((me + 1) % n) * 1000 + 5);
    } else if (shmemx_direct_access() == 2) { /* mapped if on this node */
        CHECK(peer == NULL || peer[5] == ((me + 1) % n) * 1000 + 5);
    } else {
        CHECK(peer == NULL || n == 1 || peer == a);
    }
    CHECK(shmem_ptr(a, me) == a);

    int *z = shmem_calloc(1000, sizeof(int));
    for (int i = 0; i < 1000; i++) CHECK(z[i] == 0);
    double *al = shmem_align(4096, 3 * sizeof(double));
    CHECK(al != NULL && ((uintptr_t)al % 4096) == 0);
    long *r = shmem_realloc(a, 200 * sizeof(long));
    CHECK(r != NULL);
    for (int i = 0; i < 100; i++) CHECK(r[i] == me * 1000 + i);
    void *legacy = shmalloc(64);
    void *legacy2 = shmemalign(256, 64);
    CHECK(legacy && legacy2 && ((uintptr_t)legacy2 % 256) == 0);
    legacy = shrealloc(legacy, 128);
    shfree(legacy);
    shfree(legacy2);
    /* a large block: the default heap holds ~200 MB benchmarks */
    char *big = shmem_malloc(200u << 20);
    CHECK(big != NULL);
    big[(200u << 20) - 1] = 1;
    shmem_free(big);

    /* globals are remotely accessible: everybody adds into PE 0's counter and writes
     * its slot of the right neighbour's table */
    shmem_long_atomic_add(&global_counter, me + 1, 0);
    shmem_int_p(&global_table[me % 8], 100 + me, (me + 1) % n);
    shmem_barrier_all();
    if (me == 0) CHECK(global_counter == (long)n * (n + 1) / 2);
    int left = (me + n - 1) % n;
    CHECK(global_table[left % 8] == 100 + left);
    CHECK(shmem_long_g(&global_counter, 0) == (long)n * (n + 1) / 2);

    shmem_free(r);
    shmem_free(z);
    shmem_free(al);
    shmem_free(NULL);
    shmem_finalize();
    return 0;
}
