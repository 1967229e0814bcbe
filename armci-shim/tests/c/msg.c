/* armci_msg_*: reductions of every type and operator (exact values), broadcast from
 * every root, exchange_address, bintree (a consistent tree over all ranks). */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    armci_msg_init(&argc, &argv);
    ARMCI_Init();
    int me = armci_msg_me(), n = armci_msg_nproc();
    long S = (long)n * (n - 1) / 2;
    int iv[3] = {me, -me, 1};
    armci_msg_igop(iv, 3, "+");
    CHECK(iv[0] == S && iv[1] == -S && iv[2] == n);
    int imx[2] = {me, -me - 5};
    armci_msg_igop(imx, 2, "absmax");
    CHECK(imx[0] == n - 1 && imx[1] == n + 4);
    long lv[2] = {me + 1, 1L << 40};
    armci_msg_lgop(lv, 2, "*");
    long fact = 1;
    for (int r = 1; r <= n; r++) fact *= r;
    CHECK(lv[0] == fact);
    long long llv = (long long)me << 35;
    armci_msg_llgop(&llv, 1, "max");
    CHECK(llv == (long long)(n - 1) << 35);
    float fv = (float)me - 0.5f;
    armci_msg_fgop(&fv, 1, "min");
    CHECK(fv == -0.5f);
    double dv[2] = {me * 0.25, -(double)me};
    armci_msg_dgop(dv, 2, "+");
    CHECK(dv[0] == 0.25 * S && dv[1] == -(double)S);
    double dm = me == 1 ? -100.0 : me;
    armci_msg_dgop(&dm, 1, "absmin");
    CHECK(dm == 0.0);
    int orv = 1 << me;
    armci_msg_reduce(&orv, 1, "or", ARMCI_INT);
    CHECK(orv == (1 << n) - 1);
    int land = me != 0, lor = me == n - 1;
    armci_msg_igop(&land, 1, "&&");
    armci_msg_igop(&lor, 1, "||");
    CHECK(land == 0 && lor == 1);
    /* operators match by prefix (strncmp in ARMCI): Fortran callers' strings run on past
     * the operator (Global Arrays' disk arrays pass "+" then a file name) */
    char fortran_op[] = {'+', 'd', 'r', 'a', '.', 'f', 0};
    long pl = me;
    armci_msg_lgop(&pl, 1, fortran_op);
    CHECK(pl == S);
    int pm = -me;
    armci_msg_igop(&pm, 1, "absmaxZZ");
    CHECK(pm == n - 1);
    double g = me;
    armci_msg_gop_scope(SCOPE_ALL, &g, 1, "max", ARMCI_DOUBLE);
    CHECK(g == n - 1);
    for (int root = 0; root < n; root++) {
        char buf[100];
        memset(buf, me == root ? 'a' + root : 0, sizeof buf);
        armci_msg_bcast(buf, sizeof buf, root);
        for (int i = 0; i < 100; i++) CHECK(buf[i] == 'a' + root);
    }
    void *ptrs[64] = {0};
    CHECK(n <= 64);
    ptrs[me] = (void *)(long)(1000 + me);
    armci_exchange_address(ptrs, n);
    for (int r = 0; r < n; r++) CHECK(ptrs[r] == (void *)(long)(1000 + r));
    int root, up, left, right;
    armci_msg_bintree(SCOPE_ALL, &root, &up, &left, &right);
    CHECK(root == 0 && (me == 0) == (up == -1));
    if (up >= 0) CHECK(up < me);
    if (left >= 0) CHECK(left > me && left < n);
    if (right >= 0) CHECK(right == left + 1 && right < n);
    /* every rank but 0 is someone's child exactly once */
    int kids[2] = {left, right}, cnt[64] = {0};
    int *all = calloc(2 * n, sizeof(int));
    all[2 * me] = kids[0]; all[2 * me + 1] = kids[1];
    armci_msg_igop(all, 2 * n, "+"); /* others contribute 0; -1 entries stay -1 */
    for (int i = 0; i < 2 * n; i++) if (all[i] >= 0) cnt[all[i]]++;
    for (int r = 1; r < n; r++) CHECK(cnt[r] == 1);
    CHECK(cnt[0] == 0);
    /* sel: the contributor with the greatest key gives its whole buffer */
    struct { long key; long payload[3]; } sel = {me == 0 ? 5 : me * 10, {me, me + 1, me + 2}};
    armci_msg_sel_scope(SCOPE_ALL, &sel, sizeof sel, "max", ARMCI_LONG, me != n - 1);
    int win = n == 2 ? 0 : n - 2;
    CHECK(sel.key == (win == 0 ? 5 : win * 10) && sel.payload[0] == win && sel.payload[2] == win + 2);
    double dsel[2] = {(double)(n - me), (double)me};
    armci_msg_sel(dsel, sizeof dsel, "min", ARMCI_DOUBLE, 1);
    CHECK(dsel[0] == 1.0 && dsel[1] == n - 1);
    armci_msg_barrier();
    ARMCI_Finalize();
    armci_msg_finalize();
    return 0;
}
