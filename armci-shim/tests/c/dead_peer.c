/* A rank dies in the middle of a transfer loop (exits without ARMCI_Finalize); the
 * others, still getting from and putting to it, must get an error naming their call
 * and exit non-zero, not hang. */
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
    char buf[4096];
    for (long i = 0; i < 10 * 1000 * 1000; i++) {
        ARMCI_Get(b[n - 1], buf, sizeof buf, n - 1);
        ARMCI_Put(buf, b[n - 1], sizeof buf, n - 1);
        if (i % 1000 == 0) ARMCI_Fence(n - 1);
    }
    printf("rank %d: the loop ended without an error\n", me);
    return 0;
}
