/* Test helpers: CHECK fails the job with the file, line and condition. */
#ifndef GASNET_TEST_CHECK_H
#define GASNET_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gasnetex.h>
#include <gasnet_tools.h>
#define CHECK(c) do { if (!(c)) { \
    fprintf(stderr, "rank %u: %s:%d: check failed: %s\n", gex_System_QueryJobRank(), __FILE__, __LINE__, #c); \
    exit(2); } } while (0)
#define CHECKF(c, ...) do { if (!(c)) { \
    fprintf(stderr, "rank %u: %s:%d: check failed: %s: ", gex_System_QueryJobRank(), __FILE__, __LINE__, #c); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(2); } } while (0)
#define BARRIER() do { gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS); \
    CHECK(gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS) == GASNET_OK); } while (0)
#endif
