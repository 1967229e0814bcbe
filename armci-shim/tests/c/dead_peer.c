/* A rank dies in the middle of a transfer loop (exits without ARMCI_Finalize); the
 * others, still getting from and putting to it, must get an error naming their call
 * and exit non-zero, not hang. With the argument "spin" the others only spin on the
 * dead rank's word with 8-byte ARMCI_Rmw and ARMCI_Get (the direct path's fast ways,
 * which leave the lost-rank check to every 64th call), as a program waiting for a flag
 * or a lock would. */
#include <string.h>
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    void **b = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(b, 1 << 16) == 0);
    ARMCI_Barrier();
    if (me == n - 1) {
        usleep(100 * 1000);
        _exit(0); /* dies without finalizing */
    }
    if (argc > 1 && !strcmp(argv[1], "spin")) {
        long old, v;
        for (long i = 0; i < 1000L * 1000 * 1000; i++) {
            ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, b[n - 1], 1, n - 1);
            ARMCI_Get(b[n - 1], &v, sizeof v, n - 1);
        }
        printf("rank %d: the loop ended without an error\n", me);
        return 0;
    }
    char buf[4096];
    for (long i = 0; i < 10 * 1000 * 1000; i++) {
        ARMCI_Get(b[n - 1], buf, sizeof buf, n - 1);
        ARMCI_Put(buf, b[n - 1], sizeof buf, n - 1);
        if (i % 1000 == 0) ARMCI_Fence(n - 1);
    }
    printf("rank %d: the loop ended without an error\n", me);
    return 0;
}
