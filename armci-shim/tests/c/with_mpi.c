/*
 * ARMCI inside an MPI job (issue 19): MPI_Init, then ARMCI_Init (the second library joins
 * the same rank on its own port), a put around the ring checked through MPI, the groups'
 * MPI communicators (armci_group_comm), then ARMCI_Finalize and MPI_Finalize. Also
 * ARMCI_Init_thread_comm and its refusals (below).
 */
#include <mpi.h>
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    /* argv[1]: "" MPI_Init + ARMCI_Init; "thread_comm" MPI_Init_thread +
     * ARMCI_Init_thread_comm over a duplicate of MPI_COMM_WORLD; the bad ones end the job:
     * "bad_comm" ARMCI_Init_thread_comm over half the processes, "bad_level"
     * ARMCI_Init_thread asking more than the MPI's thread level */
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "thread_comm")) {
        int provided = -1;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        if (provided < MPI_THREAD_FUNNELED ||
            ARMCI_Init_thread_comm(MPI_THREAD_FUNNELED, dup) != 0) return 2;
        MPI_Comm_free(&dup);
    } else if (!strcmp(mode, "bad_comm")) {
        MPI_Init(&argc, &argv);
        int r;
        MPI_Comm half;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
        ARMCI_Init_thread_comm(MPI_THREAD_SINGLE, half);
        return 3; /* not reached */
    } else if (!strcmp(mode, "bad_level")) {
        int provided = -1;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
        if (provided >= MPI_THREAD_MULTIPLE) return 4; /* nothing to refuse */
        ARMCI_Init_thread(MPI_THREAD_MULTIPLE);
        return 3; /* not reached */
    } else {
        MPI_Init(&argc, &argv);
        ARMCI_Init();
    }
    if (!ARMCI_Initialized()) return 2;
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
