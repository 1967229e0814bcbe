/* ARMCI-MPI's extensions (armcix.h): a split of the world by parity with keys reversing
 * the order, a duplicate of it, mutex handles on the split groups protecting a
 * non-atomic counter (lock/unlock from every member), trylock on a held and a free
 * mutex, ARMCIX_Progress, and the world's ARMCI_Create_mutexes beside a handle. */
#include <armcix.h>
#include "check.h"

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    ARMCI_Group world, half, dup;
    ARMCI_Group_get_world(&world);
    CHECK(ARMCIX_Group_split(&world, me % 2, -me, &half) == 0);
    int hr, hs, nh = (n + 1 - me % 2) / 2;
    ARMCI_Group_rank(&half, &hr);
    ARMCI_Group_size(&half, &hs);
    CHECK(hs == nh);
    CHECK(hr == nh - 1 - me / 2); /* keys -me: the highest rank first */
    for (int i = 0; i < hs; i++)
        CHECK(ARMCI_Absolute_id(&half, i) == me % 2 + 2 * (nh - 1 - i));
    CHECK(ARMCIX_Group_dup(&half, &dup) == 0);
    int dr, ds;
    ARMCI_Group_rank(&dup, &dr);
    ARMCI_Group_size(&dup, &ds);
    CHECK(dr == hr && ds == hs && ARMCI_Absolute_id(&dup, 0) == ARMCI_Absolute_id(&half, 0));

    /* A counter per half on its group rank 0, guarded by mutex 1 of that process. */
    void **base = malloc(n * sizeof(void *));
    ARMCI_Malloc(base, sizeof(long));
    *(long *)base[me] = 0;
    CHECK(ARMCI_Create_mutexes(1) == 0); /* the world's set, beside the handle */
    armcix_mutex_hdl_t h = ARMCIX_Create_mutexes_hdl(2, &dup);
    CHECK(h != NULL);
    ARMCI_Barrier();
    int owner = ARMCI_Absolute_id(&half, 0);
    const int rounds = 50;
    for (int i = 0; i < rounds; i++) {
        ARMCIX_Lock_hdl(h, 1, owner);
        long v = ARMCI_GetValueLong(base[owner], owner);
        ARMCIX_Progress();
        ARMCI_PutValueLong(v + 1, base[owner], owner);
        ARMCIX_Unlock_hdl(h, 1, owner);
    }
    ARMCI_Lock(0, 0);
    ARMCI_Unlock(0, 0);
    ARMCI_Barrier();
    if (me == owner) CHECKF(*(long *)base[me] == (long)rounds * hs, "%ld", *(long *)base[me]);
    /* trylock: the owner takes mutex 0 of itself; held, nobody else gets it. */
    if (me == owner) CHECK(ARMCIX_Trylock_hdl(h, 0, owner) == 0);
    ARMCI_Barrier();
    if (me != owner) CHECK(ARMCIX_Trylock_hdl(h, 0, owner) == 1);
    ARMCI_Barrier();
    if (me == owner) ARMCIX_Unlock_hdl(h, 0, owner);
    ARMCI_Barrier();
    if (hr == hs - 1) { /* free again: the last member takes it and gives it back */
        CHECK(ARMCIX_Trylock_hdl(h, 0, owner) == 0);
        ARMCIX_Unlock_hdl(h, 0, owner);
    }
    ARMCI_Barrier();
    CHECK(ARMCIX_Destroy_mutexes_hdl(h) == 0);
    CHECK(ARMCI_Destroy_mutexes() == 0);
    ARMCI_Free(base[me]);
    ARMCI_Group_free(&dup);
    ARMCI_Group_free(&half);
    if (me == 0) printf("armcix: ok\n");
    ARMCI_Finalize();
    return 0;
}
