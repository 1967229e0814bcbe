/* CPU binding by the rank within the machine (SKIFMPI_BIND=core, the default; capi env.rs,
 * skifch_drivers::place): every rank reports the one CPU it is bound to (-1: more than
 * one), and rank 0 checks the job against the expectation the test passes:
 *   BIND_CPUS      the CPUs the launcher let the ranks run on;
 *   BIND_MACHINES  ranks per machine, in rank order ("2,2": ranks 0-1 on one, 2-3 on
 *                  another), the groups SKIFCH_MACHINE_ID or the kernel makes.
 * A machine whose ranks fit its CPUs has its k-th rank on its k-th CPU; a machine with
 * more ranks than CPUs, or with one rank, leaves them unbound; SKIFMPI_BIND=none binds
 * nothing. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *cpus_s = getenv("BIND_CPUS"), *machines = getenv("BIND_MACHINES");
    const char *policy = getenv("SKIFMPI_BIND");
    CHECK(cpus_s && machines);
    int cpus = atoi(cpus_s);
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    int mine = -1;
    if (CPU_COUNT(&set) == 1)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) mine = c;
    int *all = malloc(sizeof(int) * size);
    CHECK(all);
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        /* The k-th CPU allowed: the launcher's set is this rank's, before binding, only if
         * unbound; the tests run with every CPU allowed, 0..cpus-1. */
        int first = 0, bound = 0;
        const char *p = machines;
        while (*p) {
            int n = atoi(p);
            CHECK(n > 0 && first + n <= size);
            int want = n >= 2 && n <= cpus && !(policy && strcmp(policy, "none") == 0);
            for (int k = 0; k < n; k++) {
                if (all[first + k] != (want ? k : -1))
                    fprintf(stderr, "bind: rank %d on CPU %d, expected %d\n", first + k,
                            all[first + k], want ? k : -1);
                CHECK(all[first + k] == (want ? k : -1));
            }
            bound += want ? n : 0;
            first += n;
            p = strchr(p, ',');
            if (!p) break;
            p++;
        }
        CHECK(first == size);
        printf("bind: %d ranks ok, %d bound\n", size, bound);
    }
    free(all);
    MPI_Finalize();
    return 0;
}
