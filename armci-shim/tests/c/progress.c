/* A rank computing outside the library must not stall the others: rank 0 hosts a mutex
 * and a counter, then spins on its local counter without any ARMCI call while the other
 * ranks lock, read, increment, write and unlock it. On the message path this needs the
 * progress thread (ARMCI_SHIM_PROGRESS_THREAD=1); on the direct path nothing. */
#include <time.h>
#include "check.h"

enum { ITER = 20 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    void **b = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(b, 64) == 0);
    CHECK(ARMCI_Create_mutexes(me == 0 ? 1 : 0) == 0);
    ARMCI_Barrier();
    if (me == 0) {
        volatile long *c = b[0];
        double t0 = now();
        while (*c < (long)(n - 1) * ITER)
            CHECKF(now() - t0 < 20.0, "the counter stalled at %ld while rank 0 computed", *c);
    } else {
        for (int i = 0; i < ITER; i++) {
            ARMCI_Lock(0, 0);
            long v = ARMCI_GetValueLong(b[0], 0);
            CHECK(ARMCI_PutValueLong(v + 1, b[0], 0) == 0);
            ARMCI_Unlock(0, 0);
        }
    }
    ARMCI_Barrier();
    CHECK(ARMCI_Destroy_mutexes() == 0);
    ARMCI_Free(b[me]);
    ARMCI_Finalize();
    return 0;
}
