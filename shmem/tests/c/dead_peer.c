/* Calls aimed at a dead PE must fail, not run on its still-mapped memory (issue 16
 * defect 3). PE 1 leaves without finalizing 0.2 s after a barrier; PE 0 repeats the
 * call named by argv[1] at PE 1 for up to 30 s from the barrier. The library must end
 * PE 0 with "skifshmem: <call>: peer lost: rank 1" (within its loss-detection time, well
 * under a second on an idle machine); if the call still succeeds after 30 s, PE 0 says so
 * and exits 3. The limit only bounds a failing run: 1.5 s was once too short for PE 1's
 * exit and its detection on a machine loaded with other jobs. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long flag[4]; /* a global: the data segment is symmetric too */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    static long psync[SHMEM_BARRIER_SYNC_SIZE];
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe();
    long *sym = shmem_malloc(8 * sizeof(long));
    long local[8] = {0}, sink = 0;
    shmem_barrier_all();
    if (me == 1) { /* dies without finalizing while PE 0 makes its calls */
        usleep(200 * 1000);
        _exit(0);
    }
    if (me != 0) { /* more PEs: wait for the job to end */
        shmem_barrier_all();
        return 0;
    }
    double t0 = now();
    while (now() - t0 < 30.0) {
        if (!strcmp(what, "quiet")) {
            shmem_putmem(sym, local, sizeof local, 1);
            shmem_quiet();
        }
        else if (!strcmp(what, "fence")) shmem_fence();
        else if (!strcmp(what, "barrier_all")) shmem_barrier_all();
        else if (!strcmp(what, "sync_all")) shmem_sync_all();
        else if (!strcmp(what, "barrier")) shmem_barrier(0, 0, 2, psync);
        else if (!strcmp(what, "getmem")) shmem_getmem(local, sym, sizeof local, 1);
        else if (!strcmp(what, "g")) sink += shmem_long_g(&flag[1], 1);
        else if (!strcmp(what, "fetch")) sink += shmem_long_atomic_fetch(&sym[1], 1);
        else if (!strcmp(what, "fetch_add")) sink += shmem_long_atomic_fetch_add(&flag[0], 1, 1);
        else if (!strcmp(what, "compare_swap")) sink += shmem_long_atomic_compare_swap(&sym[2], 0, 1, 1);
        else if (!strcmp(what, "add")) shmem_long_atomic_add(&sym[3], 1, 1);
        else if (!strcmp(what, "set")) shmem_long_atomic_set(&flag[2], 1, 1);
        else { fprintf(stderr, "dead_peer: unknown mode %s\n", what); return 4; }
    }
    fprintf(stderr, "PE 0: %s still succeeds 30 s after PE 1 left (%ld)\n", what, sink);
    return 3;
}
