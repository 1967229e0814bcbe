/* What a configure script checks before it builds on ARMCI (Global Arrays'
 * --with-armci=PREFIX: "armci.h" compiles, ARMCI_Init links from -larmci), then a little
 * work, so the flags pkg-config gives also run. message.h comes first on purpose: it must
 * stand alone (it names ARMCI_Group, which armci.h defines). */
#include <message.h>
#include <armci.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (ARMCI_Init_args(&argc, &argv) != 0) return 1;
    int me = armci_msg_me(), n = armci_msg_nproc();
    long v = me + 1;
    armci_msg_lgop(&v, 1, "+");
    if (v != (long)n * (n + 1) / 2) {
        fprintf(stderr, "rank %d: sum %ld\n", me, v);
        return 2;
    }
    ARMCI_Finalize();
    if (me == 0) printf("conftest: ok on %d ranks\n", n);
    return 0;
}
