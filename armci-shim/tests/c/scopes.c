/* The node scopes of the armci_msg_* collectives: SCOPE_NODE = the processes of the
 * caller's ARMCI_DOMAIN_SMP domain, SCOPE_MASTERS = the lowest process of each domain.
 * Expected values come from the armci_domain_* calls, so the same program checks the
 * direct path (one domain) and the message path (one process per domain). SCOPE_MASTERS
 * is called both ways: by every process (non-masters return, buffer untouched) and by
 * the masters alone (classic ARMCI). Also over a group (the even ranks). The node
 * ("cluster") calls of classic ARMCI: armci_msg_clus_*, armci_grp_clus_brdcst. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int me, n, mydom;

static int master_of(int r) {
    int d = armci_domain_id(ARMCI_DOMAIN_SMP, r);
    return armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, d, 0);
}
static int in_node(int r) { return armci_domain_id(ARMCI_DOMAIN_SMP, r) == mydom; }
static int is_master(int r) { return master_of(r) == r; }

/* The binary tree over the ascending ranks in `in[]`, as armci_msg_bintree gives it. */
static void check_tree(int scope, const int *in) {
    int list[64] = {0}, m = 0, pos = -1;
    for (int r = 0; r < n; r++) if (in[r]) { if (r == me) pos = m; list[m++] = r; }
    int root, up, left, right;
    armci_msg_bintree(scope, &root, &up, &left, &right);
    CHECKF(root == list[0], "scope %d: root %d, expected %d", scope, root, list[0]);
    if (pos < 0) { CHECK(up == -1 && left == -1 && right == -1); return; }
    CHECK(up == (pos == 0 ? -1 : list[(pos - 1) / 2]));
    CHECK(left == (2 * pos + 1 < m ? list[2 * pos + 1] : -1));
    CHECK(right == (2 * pos + 2 < m ? list[2 * pos + 2] : -1));
}

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    me = armci_msg_me();
    n = armci_msg_nproc();
    CHECK(n <= 64);
    mydom = armci_domain_my_id(ARMCI_DOMAIN_SMP);
    int master = master_of(me), node_in[64], masters_in[64];
    long node_sum = 0, masters_sum = 0;
    for (int r = 0; r < n; r++) {
        node_in[r] = in_node(r);
        masters_in[r] = is_master(r);
        if (node_in[r]) node_sum += r + 1;
        if (masters_in[r]) masters_sum += r + 1;
    }

    /* reductions */
    long x = me + 1;
    armci_msg_gop_scope(SCOPE_NODE, &x, 1, "+", ARMCI_LONG);
    CHECKF(x == node_sum, "node sum %ld, expected %ld", x, node_sum);
    x = me + 1;
    armci_msg_gop_scope(SCOPE_MASTERS, &x, 1, "+", ARMCI_LONG);
    CHECKF(x == (is_master(me) ? masters_sum : me + 1), "masters sum %ld", x);
    if (is_master(me)) {
        double d = -(double)me;
        armci_msg_gop_scope(SCOPE_MASTERS, &d, 1, "absmax", ARMCI_DOUBLE);
        int hi = 0;
        for (int r = 0; r < n; r++) if (masters_in[r]) hi = r;
        CHECK(d == hi);
    }
    int iv = -me;
    armci_msg_gop_scope(SCOPE_NODE, &iv, 1, "absmin", ARMCI_INT);
    CHECK(iv == master); /* the node's smallest |−r| is its lowest rank */

    /* broadcasts */
    char buf[64];
    memset(buf, me == master ? 'A' + master : 0, sizeof buf);
    armci_msg_bcast_scope(SCOPE_NODE, buf, sizeof buf, master);
    for (int i = 0; i < 64; i++) CHECK(buf[i] == 'A' + master);
    int b = me == 0 ? 4242 : -me;
    if (is_master(me)) armci_msg_bcast_scope(SCOPE_MASTERS, &b, sizeof b, 0);
    CHECK(b == (is_master(me) ? 4242 : -me));

    /* selection: the node's greatest key gives its buffer */
    long sel[2] = {me * 10, me};
    armci_msg_sel_scope(SCOPE_NODE, sel, sizeof sel, "max", ARMCI_LONG, 1);
    int top = 0;
    for (int r = 0; r < n; r++) if (node_in[r]) top = r;
    CHECK(sel[0] == top * 10 && sel[1] == top);

    /* the node ("cluster") forms: SCOPE_NODE reductions, a broadcast from the master */
    int ci = me + 1;
    armci_msg_clus_igop(&ci, 1, "+");
    CHECK(ci == node_sum);
    long cl = me + 1;
    armci_msg_clus_lgop(&cl, 1, "max");
    long long cll = me + 1;
    armci_msg_clus_llgop(&cll, 1, "min");
    CHECK(cll == master + 1);
    float cf = (float)(me + 1);
    armci_msg_clus_fgop(&cf, 1, "+");
    CHECK(cf == (float)node_sum);
    double cd = me + 1;
    armci_msg_clus_dgop(&cd, 1, "*");
    double prod = 1;
    long hi = 0;
    for (int r = 0; r < n; r++) if (node_in[r]) { prod *= r + 1; hi = r + 1; }
    CHECK(cd == prod && cl == hi);
    long red = me + 1;
    armci_msg_reduce_scope(SCOPE_NODE, &red, 1, "+", ARMCI_LONG);
    CHECK(red == node_sum);
    int cb[4] = {me, me, me, me};
    armci_msg_clus_brdcst(cb, sizeof cb);
    for (int i = 0; i < 4; i++) CHECK(cb[i] == master);

    /* trees */
    int all_in[64];
    for (int r = 0; r < n; r++) all_in[r] = 1;
    check_tree(SCOPE_ALL, all_in);
    check_tree(SCOPE_NODE, node_in);
    check_tree(SCOPE_MASTERS, masters_in);

    /* over a group: the even ranks */
    int evens[64], ne = 0;
    for (int r = 0; r < n; r += 2) evens[ne++] = r;
    ARMCI_Group g;
    ARMCI_Group_create(ne, evens, &g);
    if (me % 2 == 0) {
        long gs = me + 1, expect = 0, gm = me + 1, gm_expect = 0;
        int seen[64] = {0};
        for (int r = 0; r < n; r += 2) if (in_node(r)) expect += r + 1;
        armci_msg_group_gop_scope(SCOPE_NODE, &gs, 1, "+", ARMCI_LONG, &g);
        CHECKF(gs == expect, "group node sum %ld, expected %ld", gs, expect);
        /* the group's masters: its lowest member of each domain */
        int gmaster = -1;
        for (int r = 0; r < n; r += 2) {
            int d = armci_domain_id(ARMCI_DOMAIN_SMP, r);
            if (!seen[d]) { seen[d] = 1; gm_expect += r + 1; if (d == mydom) gmaster = r; }
        }
        armci_msg_group_gop_scope(SCOPE_MASTERS, &gm, 1, "+", ARMCI_LONG, &g);
        CHECKF(gm == (me == gmaster ? gm_expect : me + 1), "group masters sum %ld", gm);
        int gb = me == 0 ? 99 : -me;
        armci_msg_group_bcast_scope(SCOPE_MASTERS, &gb, sizeof gb, 0, &g);
        CHECK(gb == (me == gmaster ? 99 : -me));
    }
    /* the world group's node from its master (group ranks = job ranks there) */
    ARMCI_Group world;
    ARMCI_Group_get_world(&world);
    int nodesize = armci_domain_nprocs(ARMCI_DOMAIN_SMP, mydom), gcb = me == master ? 777 : -me;
    armci_grp_clus_brdcst(&gcb, sizeof gcb, master, nodesize, &world);
    CHECK(gcb == 777);
    /* addresses over a group (group ranks) */
    if (me % 2 == 0) {
        void *addr[64];
        for (int i = 0; i < ne; i++) addr[i] = NULL;
        addr[me / 2] = (void *)(uintptr_t)(1000 + me);
        armci_exchange_address_grp(addr, ne, &g);
        for (int i = 0; i < ne; i++) CHECK(addr[i] == (void *)(uintptr_t)(1000 + 2 * i));
    }
    ARMCI_Group_free(&g);
    armci_msg_barrier();
    ARMCI_Finalize();
    return 0;
}
