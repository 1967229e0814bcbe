/* Symmetric allocations with different sizes on different PEs must be detected (issue
 * 16 defect 5: the next allocation landed at different offsets and later puts
 * corrupted other objects silently). argv[1] names the call; PE 0 asks for 64 bytes,
 * the others for 128 (alignments differ for shmem_align). Every PE must fail with
 * "skifshmem: <call>: invalid argument: the PEs asked for different allocations". */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe();
    size_t n = me == 0 ? 64 : 128;
    void *p = NULL;
    if (!strcmp(what, "malloc")) p = shmem_malloc(n);
    else if (!strcmp(what, "calloc")) p = shmem_calloc(n / 8, 8);
    else if (!strcmp(what, "align")) p = shmem_align(me == 0 ? 64 : 128, 64);
    else if (!strcmp(what, "realloc")) {
        p = shmem_malloc(32);
        p = shmem_realloc(p, n);
    } else if (!strcmp(what, "malloc_with_hints")) p = shmem_malloc_with_hints(n, 0);
    else if (!strcmp(what, "shmalloc")) p = shmalloc(n);
    else if (!strcmp(what, "none")) p = shmem_malloc(64);
    else {
        fprintf(stderr, "alloc_mismatch: unknown mode %s\n", what);
        return 4;
    }
    fprintf(stderr, "PE %d: %s returned %p\n", me, what, p);
    shmem_free(p);
    shmem_finalize();
    return 0; /* only "none" gets here */
}
