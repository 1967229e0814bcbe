/* Groups: the even ranks and the odd ranks as groups (created by every rank), group
 * allocation with puts between members, group barrier, broadcast and reductions, a child
 * group, absolute ids, the world and default groups (ARMCI_Malloc under a default
 * group), world allocations still working beside group ones. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    int evens[64], odds[64], ne = 0, no = 0;
    for (int r = 0; r < n; r++) { if (r % 2) odds[no++] = r; else evens[ne++] = r; }
    ARMCI_Group ge, go, world, mine;
    ARMCI_Group_create(ne, evens, &ge);
    ARMCI_Group_create(no, odds, &go);
    ARMCI_Group_get_world(&world);
    int wr, ws;
    ARMCI_Group_rank(&world, &wr);
    ARMCI_Group_size(&world, &ws);
    CHECK(wr == me && ws == n);
    int gr = -2;
    ARMCI_Group_rank(&ge, &gr);
    CHECK(gr == (me % 2 ? -1 : me / 2));
    mine = me % 2 ? go : ge;
    int gsize, grank;
    ARMCI_Group_size(&mine, &gsize);
    ARMCI_Group_rank(&mine, &grank);
    CHECK(gsize == (me % 2 ? no : ne) && grank == me / 2);
    for (int i = 0; i < gsize; i++) CHECK(ARMCI_Absolute_id(&mine, i) == (me % 2) + 2 * i);

    /* a world allocation beside the group ones */
    void **w = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(w, 64) == 0);

    void **p = malloc(gsize * sizeof(void *));
    CHECK(ARMCI_Malloc_group(p, 256 * (grank + 1), &mine) == 0);
    for (int i = 0; i < gsize; i++) CHECK(p[i] != NULL);
    /* each member writes its absolute id into slot grank of every member's block */
    for (int i = 0; i < gsize; i++) {
        long v = 1000 + me;
        CHECK(ARMCI_Put(&v, (char *)p[i] + 8 * grank, 8, ARMCI_Absolute_id(&mine, i)) == 0);
    }
    armci_msg_group_barrier(&mine);
    for (int i = 0; i < gsize; i++) CHECK(((long *)p[grank])[i] == 1000 + ARMCI_Absolute_id(&mine, i));
    /* an address of a group allocation on a rank outside the group is in no allocation of it */
    /* group collectives */
    long s = me;
    armci_msg_group_lgop(&s, 1, "+", &mine);
    long want = 0;
    for (int i = 0; i < gsize; i++) want += ARMCI_Absolute_id(&mine, i);
    CHECK(s == want);
    double d = me;
    armci_msg_group_gop_scope(SCOPE_ALL, &d, 1, "max", ARMCI_DOUBLE, &mine);
    CHECK(d == ARMCI_Absolute_id(&mine, gsize - 1));
    int b = grank == 0 ? 4242 + me : 0;
    armci_msg_group_bcast_scope(SCOPE_ALL, &b, sizeof b, 0, &mine);
    CHECK(b == 4242 + (me % 2));
    /* the world allocation still works across groups */
    long v = me;
    CHECK(ARMCI_Put(&v, (char *)w[(me + 1) % n] + 8, 8, (me + 1) % n) == 0);
    ARMCI_Barrier();
    CHECK(*(long *)((char *)w[me] + 8) == (me + n - 1) % n);
    /* a child: the first member of my group alone */
    ARMCI_Group child;
    int first = 0;
    ARMCI_Group_create_child(1, &first, &child, &mine);
    int cr;
    ARMCI_Group_rank(&child, &cr);
    CHECK(cr == (grank == 0 ? 0 : -1));
    if (grank == 0) {
        void *cp[1];
        CHECK(ARMCI_Malloc_group(cp, 32, &child) == 0);
        CHECK(cp[0] != NULL);
        int x = 5;
        armci_msg_group_igop(&x, 1, "+", &child);
        CHECK(x == 5);
        CHECK(ARMCI_Free_group(cp[0], &child) == 0);
    }
    ARMCI_Group_free(&child);
    /* default group: ARMCI_Malloc allocates among my group */
    ARMCI_Group_set_default(&mine);
    ARMCI_Group def;
    ARMCI_Group_get_default(&def);
    int ds;
    ARMCI_Group_size(&def, &ds);
    CHECK(ds == gsize);
    void **q = malloc(gsize * sizeof(void *));
    CHECK(ARMCI_Malloc(q, 128) == 0);
    int one = 1;
    CHECK(ARMCI_Acc(ARMCI_ACC_INT, &one, &one, q[0], 4, ARMCI_Absolute_id(&mine, 0)) == 0);
    armci_msg_group_barrier(&mine);
    if (grank == 0) CHECK(*(int *)q[0] == gsize);
    CHECK(ARMCI_Free(q[grank]) == 0);
    ARMCI_Group_set_default(&world);
    ARMCI_Group_free(&def);
    CHECK(ARMCI_Free_group(p[grank], &mine) == 0);
    CHECK(ARMCI_Free(w[me]) == 0);
    /* disjoint groups from one call (as MPI_Comm_create): each process passes the list
     * of its own group, the evens or the odds (Global Arrays' mirror groups); a process
     * passing a list whose members passed another is an error (bad_input "group_list") */
    ARMCI_Group split;
    ARMCI_Group_create(me % 2 ? no : ne, me % 2 ? odds : evens, &split);
    int sr, ss;
    ARMCI_Group_rank(&split, &sr);
    ARMCI_Group_size(&split, &ss);
    CHECK(sr == me / 2 && ss == gsize);
    long t = me + 1, twant = 0;
    armci_msg_group_lgop(&t, 1, "+", &split);
    for (int i = 0; i < gsize; i++) twant += ARMCI_Absolute_id(&split, i) + 1;
    CHECK(t == twant);
    void **sp = malloc(ss * sizeof(void *));
    CHECK(ARMCI_Malloc_group(sp, 64, &split) == 0);
    long sv = 7000 + me;
    CHECK(ARMCI_Put(&sv, sp[(sr + 1) % ss], 8, ARMCI_Absolute_id(&split, (sr + 1) % ss)) == 0);
    armci_msg_group_barrier(&split);
    CHECK(*(long *)sp[sr] == 7000 + ARMCI_Absolute_id(&split, (sr + ss - 1) % ss));
    CHECK(ARMCI_Free_group(sp[sr], &split) == 0);
    ARMCI_Group_free(&split);
    ARMCI_Group_free(&ge);
    ARMCI_Group_free(&go);
    ARMCI_Group_free(&world);
    ARMCI_Finalize();
    return 0;
}
