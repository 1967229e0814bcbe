/* armci_msg_snd/rcv/rcvany: a ring of tagged messages (small and 100 KB), messages of two
 * tags received out of order, and rcvany collecting one message from every rank. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    enum { BIG = 100000 };
    char *big = malloc(BIG), *in = malloc(BIG);
    for (int i = 0; i < BIG; i++) big[i] = (char)(me * 7 + i);
    long a = 100 + me, b = 200 + me;
    armci_msg_snd(1, &a, sizeof a, next);
    armci_msg_snd(2, &b, sizeof b, next);
    armci_msg_snd(3, big, BIG, next);
    long x = 0;
    int len = -1;
    armci_msg_rcv(2, &x, sizeof x, &len, prev); /* tag 2 first: out of order */
    CHECK(x == 200 + prev && len == (int)sizeof x);
    armci_msg_rcv(1, &x, sizeof x, &len, prev);
    CHECK(x == 100 + prev);
    armci_msg_rcv(3, in, BIG, &len, prev);
    CHECK(len == BIG);
    for (int i = 0; i < BIG; i++) CHECK(in[i] == (char)(prev * 7 + i));
    /* everyone sends its rank to rank 0 with tag 9 */
    armci_msg_snd(9, &me, sizeof me, 0);
    if (me == 0) {
        char *seen = calloc(n, 1);
        for (int k = 0; k < n; k++) {
            int v = -1;
            int src = armci_msg_rcvany(9, &v, sizeof v, &len);
            CHECK(src == v && v >= 0 && v < n && !seen[v] && len == (int)sizeof v);
            seen[v] = 1;
        }
        free(seen);
    }
    armci_msg_barrier();
    free(big);
    free(in);
    ARMCI_Finalize();
    return 0;
}
