/* Test helpers: CHECK fails the job with the file, line and condition. */
#ifndef ARMCI_TEST_CHECK_H
#define ARMCI_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <armci.h>

#define CHECK(c) do { if (!(c)) { \
    fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", armci_msg_me(), __FILE__, __LINE__, #c); \
    exit(2); } } while (0)
#define CHECKF(c, ...) do { if (!(c)) { \
    fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", armci_msg_me(), __FILE__, __LINE__, #c); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(2); } } while (0)
#endif
