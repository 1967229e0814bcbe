/*
 * ARMCI inside an MPI job (issue 19): MPI_Init, then ARMCI_Init (the second library joins
 * the same rank on its own port), a put around the ring checked through MPI, the groups'
 * MPI communicators (armci_group_comm), then ARMCI_Finalize and MPI_Finalize.
 */
#include <mpi.h>
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    int me, n; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &n);
    void **base = malloc(n * sizeof(void *));
    if (ARMCI_Malloc(base, 8 * sizeof(long))) return 2;
    long v = 1000 + me;
    ARMCI_Put(&v, (long *)base[(me + 1) % n] + me, sizeof v, (me + 1) % n);
    ARMCI_Barrier();
    long got = ((long *)base[me])[(me + n - 1) % n];
    MPI_Barrier(MPI_COMM_WORLD);
    int ok = got == 1000 + (me + n - 1) % n, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    /* the groups' MPI communicators (armci_group_comm, as Global Arrays uses them) */
    ARMCI_Group world, evens;
    ARMCI_Group_get_world(&world);
    int cmp = -1;
    MPI_Comm_compare(armci_group_comm(&world), MPI_COMM_WORLD, &cmp);
    if (cmp != MPI_CONGRUENT) all = 0;
    int list[64], ne = 0;
    for (int r = 0; r < n && ne < 64; r += 2) list[ne++] = r;
    ARMCI_Group_create(ne, list, &evens);
    MPI_Comm ec = armci_group_comm(&evens);
    if (me % 2) {
        if (ec != MPI_COMM_NULL) all = 0;
    } else {
        int er = -1, es = -1, sum = 0;
        MPI_Comm_rank(ec, &er);
        MPI_Comm_size(ec, &es);
        MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, ec);
        if (er != me / 2 || es != ne || sum != (ne - 1) * ne) all = 0;
    }
    ARMCI_Group_free(&evens);
    int both = all;
    MPI_Allreduce(&both, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (me == 0) printf("armci+mpi: %s\n", all ? "ok" : "WRONG");
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
    MPI_Finalize();
    return all ? 0 : 1;
}
