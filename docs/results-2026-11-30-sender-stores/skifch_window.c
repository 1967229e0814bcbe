/*
 * skifch_window.c -- gasnet_bench's windowed message rate over raw SkifCh channels (the C
 * ABI of include/skifch.h): rank 0 sends W messages of SIZE bytes (SkifCh_Send, retried on
 * EAGAIN), then waits for an 8-byte ack; rank 1 receives W (SkifCh_Recv + SkifCh_RecvComp)
 * and sends the ack. SIZE 16 makes the 24-byte lane record of an 8-byte AM Medium (its
 * 8-byte protocol header and 8-byte payload). Rank r pinned to CPU r. Median of PASSES
 * passes after one warm-up pass.
 *
 *   cc -O2 -Iinclude docs/results-2026-11-30-sender-stores/skifch_window.c -o /tmp/skifch_window \
 *      -Ltarget/release -lskifch -Wl,-rpath,$PWD/target/release
 *   target/release/skifrun -n 2 -- /tmp/skifch_window [W=64] [SIZE=16] [WINDOWS=4000] [PASSES=11]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <sys/uio.h>
#include "skifch.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void snd(struct SkifCh *ch, netaddr_t d, void *b, size_t n) {
    struct iovec v = { b, n };
    while (SkifCh_Send(ch, d, &v, 1) < 0) { if (errno != EAGAIN) { perror("send"); exit(1); } }
}
static void rcv(struct SkifCh *ch) {
    struct iovec c[SKIFCH_CONT_SIZE]; int k;
    while (SkifCh_Recv(ch, c, &k) < 0) { if (errno != EAGAIN) { perror("recv"); exit(1); } }
    SkifCh_RecvComp(ch);
}
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    int w = argc > 1 ? atoi(argv[1]) : 64; size_t size = argc > 2 ? atol(argv[2]) : 16;
    long wins = argc > 3 ? atol(argv[3]) : 4000; int passes = argc > 4 ? atoi(argv[4]) : 11;
    SkifCh_Init(&argc, &argv);
    int me = SkifCh_Rank();
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(me, &s); sched_setaffinity(0, sizeof s, &s);
    struct SkifCh *ch = SkifCh_Open(4);
    netaddr_t peer = SkifCh_Addr(1 - me, 4);
    char buf[4096]; memset(buf, 1, sizeof buf);
    double r[32];
    for (int p = 0; p < passes + 1; p++) {
        double t0 = now();
        for (long i = 0; i < wins; i++) {
            if (me == 0) { for (int j = 0; j < w; j++) snd(ch, peer, buf, size); rcv(ch); }
            else { for (int j = 0; j < w; j++) rcv(ch); snd(ch, peer, buf, 8); }
        }
        double t = now() - t0;
        if (p) r[p - 1] = wins * w / t;
    }
    if (me == 0) { qsort(r, passes, sizeof r[0], cmp); printf("skifch_window w=%d size=%zu: median %.2f M msg/s (min %.2f max %.2f)\n", w, size, r[passes/2]/1e6, r[0]/1e6, r[passes-1]/1e6); }
    SkifCh_Close(ch); SkifCh_Finalize();
    return 0;
}
