/* shmem_global_exit(status) ends every PE with that status and the launcher reports it
 * (OpenSHMEM 1.5 §9.1.6; issue 16: the job exited 1, and 1 for status 0). PE 1 calls
 * shmem_global_exit(argv[1]) while the other PEs wait in a barrier it never joins (or,
 * with argv[2], right after shmem_init, where the others may still be in it). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int status = argc > 1 ? atoi(argv[1]) : 7;
    int early = argc > 2; /* argv[2]: call it right after shmem_init, peers maybe still in it */
    shmem_init();
    int me = shmem_my_pe();
    if (!early) shmem_barrier_all();
    if (me == 1) shmem_global_exit(status);
    shmem_barrier_all();
    fprintf(stderr, "PE %d: passed a barrier that PE 1 never joined\n", me);
    shmem_finalize();
    return 3;
}
