/* Under the default MPI_ERRORS_ARE_FATAL an error aborts the job with a message naming
 * the call. argv[1] picks the error: "rank" (MPI_Send to a rank that does not exist) or
 * "win" (MPI_Put on MPI_WIN_NULL) or "spawn" (MPI_Comm_spawn: no dynamic processes). Rank 0 makes the error; the others wait in a
 * receive that never comes (they must be ended by the job's abort, not hang). "abort": the
 * last rank calls MPI_Abort(MPI_COMM_WORLD, 7) itself, the others wait for it. */
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int x = 0;
    if (argc > 1 && argv[1][0] == 'a') {
        if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, 7);
        MPI_Recv(&x, 1, MPI_INT, size - 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("fatal: rank %d received from the aborting rank\n", rank);
    } else if (rank == 0) {
        if (argc > 1 && argv[1][0] == 's') {
            MPI_Comm inter;
            MPI_Comm_spawn("./none", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                           MPI_ERRCODES_IGNORE);
        } else if (argc > 1 && argv[1][0] == 'w') {
            MPI_Put(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_WIN_NULL);
        } else {
            MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        }
        printf("fatal: rank 0 returned from the failing call\n");
    } else {
        MPI_Recv(&x, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
