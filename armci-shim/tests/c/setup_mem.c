/* Setup and memory: init, ranks, collective allocation of different sizes per rank (one
 * rank 0 bytes), every base visible to all, contiguous put/get between all pairs, local
 * allocation, fences, barriers, broadcast, free in order and out of order, finalize. */
#include <string.h>
#include <stdint.h>
#include "check.h"

int main(int argc, char **argv) {
    CHECK(ARMCI_Initialized() == 0);
    CHECK(ARMCI_Init_args(&argc, &argv) == 0);
    CHECK(ARMCI_Initialized() == 1);
    CHECK(ARMCI_Init() == 0); /* a second init is harmless */
    int me = armci_msg_me(), n = armci_msg_nproc();
    CHECK(n >= 2 && me >= 0 && me < n);

    void **a = malloc(n * sizeof(void *)), **b = malloc(n * sizeof(void *));
    /* rank r has 64*(r+1) bytes in a */
    CHECK(ARMCI_Malloc(a, 64 * (me + 1)) == 0);
    for (int r = 0; r < n; r++) CHECK(a[r] != NULL);
    /* the last rank has nothing in b */
    CHECK(ARMCI_Malloc(b, me == n - 1 ? 0 : 4096) == 0);
    CHECK(b[n - 1] == NULL);
    for (int r = 0; r < n - 1; r++) CHECK(b[r] != NULL);
    /* fresh memory is zeroed */
    for (int i = 0; i < 64 * (me + 1); i++) CHECK(((char *)a[me])[i] == 0);
    ARMCI_Barrier(); /* everyone has looked before anyone writes */

    /* every rank writes its id into its slot of every other rank's a */
    for (int r = 0; r < n; r++) {
        int64_t v = 1000 * me + r;
        CHECK(ARMCI_Put(&v, (char *)a[r] + 8 * me, 8, r) == 0);
        ARMCI_Fence(r);
    }
    ARMCI_AllFence();
    ARMCI_Barrier();
    for (int s = 0; s < n; s++) {
        int64_t v = ((int64_t *)a[me])[s];
        CHECKF(v == 1000 * s + me, "slot %d holds %ld", s, (long)v);
    }
    /* get every rank's slots back */
    for (int r = 0; r < n; r++) {
        int64_t got[64];
        CHECK(ARMCI_Get(a[r], got, 8 * n, r) == 0);
        for (int s = 0; s < n; s++) CHECK(got[s] == 1000 * s + r);
    }
    armci_msg_barrier();

    void *loc = ARMCI_Malloc_local(1000);
    CHECK(loc != NULL);
    memset(loc, 7, 1000);
    CHECK(ARMCI_Free_local(loc) == 0);

    int64_t root_val = me == 1 ? 4242 : 0;
    armci_msg_bcast(&root_val, 8, 1);
    CHECK(root_val == 4242);
    root_val = me == 0 ? 77 : 0;
    armci_msg_brdcst(&root_val, 8, 0);
    CHECK(root_val == 77);

    /* free out of allocation order, then allocate again */
    CHECK(ARMCI_Free(a[me]) == 0);
    CHECK(ARMCI_Free(b[me]) == 0);
    CHECK(ARMCI_Malloc(a, 1 << 20) == 0);
    for (int r = 0; r < n; r++) CHECK(a[r] != NULL);
    ARMCI_Barrier();
    CHECK(ARMCI_Free(a[me]) == 0);
    CHECK(armci_timer() >= 0.0);
    CHECK(ARMCI_Finalize() == 0);
    CHECK(ARMCI_Initialized() == 0);
    free(a);
    free(b);
    return 0;
}
