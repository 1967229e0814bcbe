/* Bad input must give a clear message and a non-zero exit, never corruption or a hang.
 * argv[1]: addr (put to a non-symmetric address), pe (PE out of range), range (an access
 * running past the end of the heap), heap (exhaustion: NULL and a message), dead (a PE
 * dies while another waits for it), exit (shmem_global_exit while others wait), coll (mismatched collective sizes), free (freeing a
 * non-heap pointer). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *sym = shmem_malloc(8 * sizeof(long));
    long local[8] = {0};
    shmem_barrier_all();
    if (!strcmp(what, "addr")) {
        shmem_long_put(local, sym, 1, (me + 1) % n);
    } else if (!strcmp(what, "pe")) {
        shmem_long_p(sym, 1, n);
    } else if (!strcmp(what, "range")) {
        shmem_getmem(local, sym, (size_t)1 << 40, 0);
    } else if (!strcmp(what, "heap")) {
        void *p = shmem_malloc((size_t)1 << 40);
        if (p == NULL) {
            fprintf(stderr, "PE %d: shmem_malloc returned NULL\n", me);
            shmem_finalize();
            return 3;
        }
    } else if (!strcmp(what, "dead")) {
        if (me == 1) _exit(0); /* dies without finalizing */
        shmem_long_wait_until(&sym[0], SHMEM_CMP_EQ, 1); /* nobody will set it */
    } else if (!strcmp(what, "exit")) {
        /* PE 0 ends the job while the others wait for a flag that never comes */
        if (me == 0) {
            fprintf(stderr, "PE 0: calling shmem_global_exit(7)\n");
            shmem_global_exit(7);
        }
        shmem_long_wait_until(&sym[0], SHMEM_CMP_EQ, 1);
    } else if (!strcmp(what, "coll")) {
        /* mismatched sizes: PE 0 broadcasts 2 elements, the others expect 4 */
        shmem_long_broadcast(SHMEM_TEAM_WORLD, sym + 4, sym, me == 0 ? 2 : 4, 0);
    } else if (!strcmp(what, "free")) {
        shmem_free(local);
    }
    shmem_finalize();
    return 0; /* only "none" gets here */
}
