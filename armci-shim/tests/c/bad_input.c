/* Bad input, chosen by argv[1]: rank 0 makes one bad call into its own allocation (so
 * that its exit handler can check nothing was written) or to a bad rank; the job must
 * end with "armci: <call>: <why>" and a non-zero status. The other ranks wait in a
 * barrier (they see the lost rank). */
#include <string.h>
#include "check.h"

enum { SIZE = 4096, FILL = 0x5a };
static unsigned char *mine;
static unsigned char local[SIZE];

static void check_untouched(void) {
    for (int i = 0; i < SIZE; i++)
        if (mine[i] != FILL || local[i] != FILL) {
            printf("rank 0: written at byte %d\n", i);
            fflush(stdout);
            return;
        }
    printf("rank 0: untouched\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    void **b = malloc(n * sizeof(void *));
    CHECK(ARMCI_Malloc(b, SIZE) == 0);
    mine = b[me];
    memset(mine, FILL, SIZE);
    memset(local, FILL, SIZE);
    unsigned char src[SIZE];
    memset(src, 1, SIZE);
    ARMCI_Barrier();
    const char *c = argc > 1 ? argv[1] : "";
    if (me == 0) {
        atexit(check_untouched);
        if (!strcmp(c, "outside")) {
            /* 8 bytes of which the last 4 are past the allocation */
            ARMCI_Put(src, mine + SIZE - 4, 8, 0);
        } else if (!strcmp(c, "not_allocated")) {
            /* a local stack address is in no allocation */
            ARMCI_Put(src, local, 8, 1);
        } else if (!strcmp(c, "strides")) {
            /* destination stride 10 < count[0] = 16: the rows would overlap */
            int count[2] = {16, 4}, ss[1] = {16}, ds[1] = {10};
            ARMCI_PutS(src, ss, mine, ds, count, 1, 0);
        } else if (!strcmp(c, "strided_outside")) {
            /* the last of 300 rows of 16 bytes, 16 apart, leaves the allocation */
            int count[2] = {16, 300}, ss[1] = {16}, ds[1] = {16};
            ARMCI_GetS(mine, ds, local, ss, count, 1, 0);
        } else if (!strcmp(c, "rank")) {
            ARMCI_Put(src, mine, 8, n);
        } else if (!strcmp(c, "negative_rank")) {
            ARMCI_GetValueInt(mine, -1);
        } else if (!strcmp(c, "vector")) {
            /* the second segment is outside: nothing of the first may land either */
            void *s[2] = {src, src}, *d[2] = {mine, mine + SIZE};
            armci_giov_t v = {s, d, 8, 2};
            ARMCI_PutV(&v, 1, 0);
        } else if (!strcmp(c, "acc_type")) {
            int one = 1;
            ARMCI_Acc(17, &one, src, mine, 8, 0);
        } else if (!strcmp(c, "group_list")) {
            /* rank 0 names rank 1 in its group, rank 1 passes another list */
            ARMCI_Group g;
            int l0[2] = {0, 1};
            ARMCI_Group_create(2, l0, &g);
        } else if (!strcmp(c, "group_outsider")) {
            /* a SCOPE_ALL collective over a group rank 0 is not in */
            ARMCI_Group g;
            int others[1] = {1};
            ARMCI_Group_create(1, others, &g);
            int x = 1;
            armci_msg_group_gop_scope(SCOPE_ALL, &x, 1, "+", ARMCI_INT, &g);
        } else if (!strcmp(c, "bad_scope")) {
            int x = 1;
            armci_msg_bcast_scope(7, &x, sizeof x, 0); /* not an armci_scope_e */
        } else if (!strcmp(c, "error")) {
            ARMCI_Error("the program gave up", 7);
        }
        printf("rank 0: the bad call returned\n");
        return 3;
    }
    if (!strcmp(c, "group_outsider")) { /* the other ranks' side of the creation */
        ARMCI_Group g;
        int others[1] = {1};
        ARMCI_Group_create(1, others, &g);
    }
    if (!strcmp(c, "group_list")) { /* the other ranks' side: a group of their own */
        ARMCI_Group g;
        ARMCI_Group_create(1, &me, &g);
    }
    ARMCI_Barrier();
    return 0;
}
