/* Shared by the mpi-lite C tests: CHECK aborts the job with the failing line. */
#ifndef MPI_LITE_TEST_CHECK_H
#define MPI_LITE_TEST_CHECK_H
#include <mpi.h>
#include <stdio.h>

static int rank, size;

#define CHECK(c) do { if (!(c)) { \
    fprintf(stderr, "%s: rank %d: line %d: CHECK(%s) failed\n", __FILE__, rank, __LINE__, #c); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)
#endif
