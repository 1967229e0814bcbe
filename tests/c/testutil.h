/*
 * Helpers shared by the C test programs of the SkifCh C ABI in tests/c.
 * Every check that fails prints where and why, then exits non-zero, so the Rust driver
 * (skifch-capi/tests/c_programs.rs) sees the failure in skifrun's exit status.
 */
#ifndef SKIFCH_TESTUTIL_H
#define SKIFCH_TESTUTIL_H

#define _GNU_SOURCE /* clock_gettime, kill: include this header first */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "skifch.h"

static int t_rank = -1;

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL rank %d %s:%d: %s: ", t_rank, __FILE__, __LINE__,   \
                    #cond);                                                           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* `expr` must fail with -1 and errno `want`. */
#define CHECK_ERR(expr, want)                                                         \
    do {                                                                              \
        errno = 0;                                                                    \
        long long r_ = (long long)(expr);                                             \
        int e_ = errno;                                                               \
        CHECK(r_ == -1 && e_ == (want), "got %lld errno %d (%s), want -1 errno %d (%s)", \
              r_, e_, strerror(e_), (want), strerror(want));                          \
    } while (0)

/* `expr` must succeed (not -1). */
#define CHECK_OK(expr)                                                                \
    do {                                                                              \
        errno = 0;                                                                    \
        long long r_ = (long long)(expr);                                             \
        CHECK(r_ != -1, "failed with errno %d (%s)", errno, strerror(errno));         \
    } while (0)

static inline double t_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Init, with rank recorded for messages. */
static inline void t_init(int *argc, char ***argv) {
    CHECK_OK(SkifCh_Init(argc, argv));
    t_rank = SkifCh_Rank();
    CHECK(t_rank >= 0, "SkifCh_Rank after Init: %d", t_rank);
}

static inline struct SkifCh *t_open(int port) {
    struct SkifCh *ch = SkifCh_Open(port);
    CHECK(ch != NULL, "SkifCh_Open(%d): errno %d (%s)", port, errno, strerror(errno));
    return ch;
}

/* Closes the channels (NULL entries skipped) and finalizes. */
static inline void t_finish(struct SkifCh **chs, int n) {
    for (int i = 0; i < n; i++)
        if (chs[i]) CHECK_OK(SkifCh_Close(chs[i]));
    CHECK_OK(SkifCh_Finalize());
}

/* Byte `k` of the test stream from channel `src` to channel `dst`: position-dependent,
 * so a lost, duplicated or reordered message shows up as a wrong byte. */
static inline unsigned char t_byte(netaddr_t src, netaddr_t dst, unsigned long long k) {
    unsigned long long x = k * 0x9E3779B97F4A7C15ull ^ ((unsigned long long)src << 32) ^ dst;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (unsigned char)x;
}

/* Sends one whole message of `len` bytes (short ones are never split: they are far below
 * any lane size), retrying on EAGAIN. */
static inline void t_send_whole(struct SkifCh *ch, netaddr_t dst, const void *buf, size_t len) {
    struct iovec iov = {(void *)buf, len};
    for (;;) {
        ssize_t n = SkifCh_Send(ch, dst, &iov, 1);
        if (n >= 0) {
            CHECK((size_t)n == len, "short message of %zu bytes split: sent %zd", len, n);
            return;
        }
        CHECK(errno == EAGAIN, "SkifCh_Send: errno %d (%s)", errno, strerror(errno));
        sched_yield();
    }
}

/* Waits for the next message on `ch`, copies it into `buf` (at most `cap` bytes; the
 * message must fit), completes it; returns its length and sender. */
static inline size_t t_recv_copy(struct SkifCh *ch, void *buf, size_t cap, netaddr_t *src) {
    struct iovec cont[SKIFCH_CONT_SIZE];
    int cnt = -1;
    ssize_t len;
    for (;;) {
        len = SkifCh_RecvFrom(ch, cont, &cnt, src);
        if (len >= 0) break;
        CHECK(errno == EAGAIN, "SkifCh_RecvFrom: errno %d (%s)", errno, strerror(errno));
        CHECK_OK(SkifCh_Wait(ch, 10000));
    }
    CHECK((size_t)len <= cap, "message of %zd bytes, buffer of %zu", len, cap);
    CHECK(cnt >= 0 && cnt <= SKIFCH_CONT_SIZE, "cont_count %d", cnt);
    size_t off = 0;
    for (int i = 0; i < cnt; i++) {
        CHECK(cont[i].iov_len > 0, "empty segment %d", i);
        memcpy((char *)buf + off, cont[i].iov_base, cont[i].iov_len);
        off += cont[i].iov_len;
    }
    CHECK(off == (size_t)len, "segments total %zu, message %zd", off, len);
    CHECK_OK(SkifCh_RecvComp(ch));
    return (size_t)len;
}

#endif
