/*
 * ARMCI inside an MPI job (issue 19): MPI_Init, then ARMCI_Init (the second library joins
 * the same rank on its own port), a put around the ring checked through MPI, then
 * ARMCI_Finalize and MPI_Finalize.
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
    if (me == 0) printf("armci+mpi: %s\n", all ? "ok" : "WRONG");
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
    MPI_Finalize();
    return all ? 0 : 1;
}
