/*
 * mpi_common.h -- what the MPI benchmark programs of benches/c share: error exit, call
 * checking and the comparison for the median of the passes. Each program defines
 * PROG (its name in messages) before including this, and sets `rank`.
 */
#ifndef MPI_COMMON_H
#define MPI_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_REPS 15
static int rank;

static void die(const char *what)
{
    fprintf(stderr, "%s: rank %d: %s\n", PROG, rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

#define CHECK(call)                                                     \
    do {                                                                \
        if ((call) != MPI_SUCCESS) die(#call);                          \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
