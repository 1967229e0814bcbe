/* Topology: the SMP domains partition the processes consistently; ARMCI_Same_node agrees
 * with armci_domain_same_id; on the direct path (ARMCI_Uses_shm) there is one domain. */
#include "check.h"

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), n = armci_msg_nproc();
    int count = armci_domain_count(ARMCI_DOMAIN_SMP), my = armci_domain_my_id(ARMCI_DOMAIN_SMP);
    CHECK(count >= 1 && my >= 0 && my < count);
    if (ARMCI_Uses_shm()) CHECK(count == 1);
    int total = 0;
    for (int d = 0; d < count; d++) {
        int k = armci_domain_nprocs(ARMCI_DOMAIN_SMP, d);
        CHECK(k >= 1);
        for (int l = 0; l < k; l++) {
            int p = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, d, l);
            CHECK(p >= 0 && p < n && armci_domain_id(ARMCI_DOMAIN_SMP, p) == d);
            CHECK(armci_domain_same_id(ARMCI_DOMAIN_SMP, p) == (d == my));
            CHECK(ARMCI_Same_node(p) == (d == my));
        }
        total += k;
    }
    CHECK(total == n);
    CHECK(armci_domain_id(ARMCI_DOMAIN_SMP, me) == my && ARMCI_Same_node(me));
    ARMCI_Finalize();
    return 0;
}
