/* A peer that dies is an error, never a hang: rank 1 exits abruptly (no MPI_Finalize)
 * while the others block on it in MPI_Recv, MPI_Wait and MPI_Barrier under
 * MPI_ERRORS_RETURN. Every survivor prints "peerdead: rank R ok".
 * With the argument "fatal": the survivors keep MPI_ERRORS_ARE_FATAL and call
 * MPI_Finalize, which fails: each aborts with one line naming its own rank.
 * $MPI_TEST_THREAD_LEVEL: the thread level to request (default MPI_THREAD_SINGLE). */
#define _DEFAULT_SOURCE
#include "check.h"
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *lv = getenv("MPI_TEST_THREAD_LEVEL");
    int provided;
    MPI_Init_thread(&argc, &argv, lv ? atoi(lv) : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int fatal = argc > 1 && argv[1][0] == 'f';
    if (!fatal) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        usleep(100 * 1000);
        _exit(3);
    }
    int x, rc;
    if (fatal) {
        usleep(200 * 1000);
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) {
        rc = MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 2) {
        MPI_Request r;
        MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &r);
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK(rc == MPI_ERR_OTHER);
    printf("peerdead: rank %d ok\n", rank);
    fflush(stdout);
    return 0;
}
