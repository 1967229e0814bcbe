/*
 * MPI and OpenSHMEM in one program (one rank: each library joins the job through the
 * launcher's descriptor and opens its own port; the rank leaves the job when the last
 * library finalizes). argv[1]: "shmem-first" or "mpi-first", the finalize order.
 */
#include <mpi.h>
#include <shmem.h>
#include <stdio.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

static long slot;

int main(int argc, char **argv) {
    CHECK(argc == 2);
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS);
    shmem_init();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(rank == shmem_my_pe() && size == shmem_n_pes());
    /* A put to the right, a message to the left: both libraries move data. */
    shmem_long_p(&slot, 100 + rank, (rank + 1) % size);
    shmem_barrier_all();
    CHECK(slot == 100 + (rank + size - 1) % size);
    int token = rank, got = -1;
    CHECK(MPI_Sendrecv(&token, 1, MPI_INT, (rank + size - 1) % size, 5, &got, 1, MPI_INT,
                       (rank + 1) % size, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(got == (rank + 1) % size);
    if (strcmp(argv[1], "shmem-first") == 0) {
        shmem_finalize();
        /* MPI still works after the other library left. */
        CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(MPI_Allreduce(&token, &got, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(got == size * (size - 1) / 2);
        CHECK(MPI_Finalize() == MPI_SUCCESS);
    } else {
        CHECK(MPI_Finalize() == MPI_SUCCESS);
        shmem_long_p(&slot, 7, (rank + 1) % size);
        shmem_barrier_all();
        CHECK(slot == 7);
        shmem_finalize();
    }
    return 0;
}
