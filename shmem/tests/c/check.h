/* Shared by the C tests: CHECK exits with status 2 naming the PE and the line. */
#ifndef SKIF_TEST_CHECK_H
#define SKIF_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: %s:%d: check failed: %s\n", \
    shmem_my_pe(), __FILE__, __LINE__, #c); exit(2); } } while (0)
#endif
