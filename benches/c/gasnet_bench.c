/*
 * gasnet_bench.c -- GASNet-EX active-message and RMA benchmark (issue 20, "Speed"), built
 * with gasnet-shim's skifch-seq.mak fragment and run under skifrun -n 2 beside UCX's
 * active messages (ucp_am_lat / ucp_am_bw of ../shared/peers/run.sh) by
 * scripts/gasnet-bench.sh. Only public gex_/gasnet_/gasnett_ names.
 *
 * Tests (CSV on rank 0's stdout: impl,test,size,value,unit):
 *   am_short_lat   0  RequestShort0 -> handler ReplyShort0, half a round trip      [us]
 *   latency        8  the same with an 8-byte Medium request and reply (as ucp_am_lat)
 *   msgrate        8  8-byte Medium requests, a window of 64, then one Short ack from the
 *                     handler that counts the 64th (osu_mbw_mr style: the test) [msg/s]
 *   msgrate_stream 8  8-byte Medium requests back to back, throttled only by the channel
 *                     (a full lane makes the request wait with progress), one Short ack
 *                     when the handler has counted them all: what ucx_perftest's ucp_am_bw
 *                     measures (its sender streams ucp_am_send_nbx calls, eager, without
 *                     a window; the receiver's handler counts; one ack at the end) [msg/s]
 *   am_long_bw     4 KiB .. 1 MiB  Long requests into rank 1's segment, window 8, ack [MB/s]
 *   put_lat / get_lat   8  gex_RMA_PutBlocking / GetBlocking, one whole operation    [us]
 *   put_rate       8  gex_RMA_PutNBI x N then gex_NBI_Wait                         [msg/s]
 * Per point: a calibration pass (N doubles until a pass takes >= 50 ms), then REPS passes
 * adding up to TARGET seconds; the median (-s best: the fastest) is printed. Every
 * payload is checked by its handler (Medium bytes, Long bytes at the destination), every
 * get's data too.
 *
 * Usage: skifrun -n 2 ./gasnet_bench [-i IMPL] [-t TARGET_S] [-r REPS] [-s median|best]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gasnetex.h>
#include <gasnet_tools.h>
#include <gasnet_coll.h>

enum { H_PING = 200, H_PONG, H_MED, H_MED_PONG, H_RATE, H_ACK, H_LONG, H_STREAM };
enum { WINDOW = 64, LWINDOW = 8 };

static gex_TM_t tm;
static gex_Rank_t me;
static void *peer_seg;
static volatile long pongs, acks, rate_got, long_got, bad;
static volatile long stream_got, stream_want = -1;

static void ping(gex_Token_t t) { gex_AM_ReplyShort0(t, H_PONG, 0); }
static void pong(gex_Token_t t) { (void)t; pongs++; }
static void med(gex_Token_t t, void *buf, size_t n) {
    if (n != 8 || ((uint8_t *)buf)[7] != 7) bad = 1;
    gex_AM_ReplyMedium0(t, H_MED_PONG, buf, n, GEX_EVENT_NOW, 0);
}
static void med_pong(gex_Token_t t, void *buf, size_t n) { (void)t; if (n != 8 || ((uint8_t *)buf)[7] != 7) bad = 1; pongs++; }
static void rate(gex_Token_t t, void *buf, size_t n) {
    if (n != 8 || ((uint8_t *)buf)[0] != 1) bad = 1;
    if (++rate_got % WINDOW == 0) gex_AM_ReplyShort0(t, H_ACK, 0);
}
static void ack(gex_Token_t t) { (void)t; acks++; }
static void stream(gex_Token_t t, void *buf, size_t n) {
    if (n != 8 || ((uint8_t *)buf)[0] != 1) bad = 1;
    if (++stream_got == stream_want) gex_AM_ReplyShort0(t, H_ACK, 0);
}
static void lng(gex_Token_t t, void *buf, size_t n) {
    if (n && (((uint8_t *)buf)[0] != 3 || ((uint8_t *)buf)[n - 1] != 3)) bad = 1;
    if (++long_got % LWINDOW == 0) gex_AM_ReplyShort0(t, H_ACK, 0);
}

static double target_s = 0.3;
static int reps = 5, best = 0;
static const char *impl = "gasnet-shim";
static uint8_t *buf;

typedef double (*pass_fn)(long n, size_t size); /* seconds for n iterations */

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double now(void) { return (double)gasnett_ticks_to_ns(gasnett_ticks_now()) * 1e-9; }

/* Rank 0 measures; rank 1 serves: both run the same passes (n is broadcast by running the
 * same calibration on both: the ranks agree through a barrier per pass). */
static double measure(pass_fn f, size_t size, long *n_out) {
    long n = 1;
    for (;;) {
        stream_got = 0, stream_want = n;
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
        double t = f(n, size);
        double agreed = t;
        /* rank 0 decides; rank 1 follows its decision through a broadcast-by-put */
        gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &agreed, &agreed, sizeof agreed, 0));
        if (agreed >= 0.05) break;
        n *= 2;
    }
    long per = (long)((double)n * (target_s / reps) / 0.05);
    if (per < 1) per = 1;
    double v[64];
    for (int r = 0; r < reps && r < 64; r++) {
        stream_got = 0, stream_want = per;
        gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
        v[r] = f(per, size);
        gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &v[r], &v[r], sizeof v[r], 0));
    }
    qsort(v, (size_t)reps, sizeof v[0], cmp);
    *n_out = per;
    return best ? v[0] : v[reps / 2];
}

static double short_lat(long n, size_t size) {
    (void)size;
    double t0 = now();
    if (me == 0) {
        long base = pongs;
        for (long i = 0; i < n; i++) {
            gex_AM_RequestShort0(tm, 1, H_PING, 0);
            GASNET_BLOCKUNTIL(pongs == base + i + 1);
        }
    }
    return now() - t0;
}
static double med_lat(long n, size_t size) {
    (void)size;
    double t0 = now();
    if (me == 0) {
        long base = pongs;
        for (long i = 0; i < n; i++) {
            gex_AM_RequestMedium0(tm, 1, H_MED, buf, 8, GEX_EVENT_NOW, 0);
            GASNET_BLOCKUNTIL(pongs == base + i + 1);
        }
    }
    return now() - t0;
}
static double med_rate(long n, size_t size) {
    (void)size;
    long windows = (n + WINDOW - 1) / WINDOW;
    double t0 = now();
    if (me == 0) {
        long base = acks;
        for (long w = 0; w < windows; w++) {
            for (int i = 0; i < WINDOW; i++) gex_AM_RequestMedium0(tm, 1, H_RATE, buf + 64, 8, GEX_EVENT_NOW, 0);
            GASNET_BLOCKUNTIL(acks == base + w + 1);
        }
    }
    return now() - t0;
}
/* Rank 1 learns n before the pass (its counter restarts), rank 0 times the sends and the
 * one ack; the barrier before each pass (measure) orders the reset before the first send. */
static double med_stream(long n, size_t size) {
    (void)size;
    double t0 = now();
    if (me == 0) {
        long base = acks;
        for (long i = 0; i < n; i++) gex_AM_RequestMedium0(tm, 1, H_STREAM, buf + 64, 8, GEX_EVENT_NOW, 0);
        GASNET_BLOCKUNTIL(acks == base + 1);
    }
    return now() - t0;
}
static double long_bw(long n, size_t size) {
    long windows = (n + LWINDOW - 1) / LWINDOW;
    double t0 = now();
    if (me == 0) {
        long base = acks;
        for (long w = 0; w < windows; w++) {
            for (int i = 0; i < LWINDOW; i++) gex_AM_RequestLong0(tm, 1, H_LONG, buf + 4096, size, peer_seg, GEX_EVENT_NOW, 0);
            GASNET_BLOCKUNTIL(acks == base + w + 1);
        }
    }
    return now() - t0;
}
static double put_lat(long n, size_t size) {
    double t0 = now();
    if (me == 0) for (long i = 0; i < n; i++) gex_RMA_PutBlocking(tm, 1, peer_seg, buf, size, 0);
    return now() - t0;
}
static double get_lat(long n, size_t size) {
    double t0 = now();
    if (me == 0) {
        for (long i = 0; i < n; i++) gex_RMA_GetBlocking(tm, buf + 128, 1, peer_seg, size, 0);
        if (memcmp(buf + 128, buf, size)) bad = 1;
    }
    return now() - t0;
}
static double put_rate(long n, size_t size) {
    double t0 = now();
    if (me == 0) {
        for (long i = 0; i < n; i++) gex_RMA_PutNBI(tm, 1, peer_seg, buf, size, GEX_EVENT_DEFER, 0);
        gex_NBI_Wait(GEX_EC_PUT, 0);
    }
    return now() - t0;
}

static void point(const char *test, pass_fn f, size_t size, int kind) {
    long n;
    double t = measure(f, size, &n);
    double v = kind == 0 ? t / n * 1e6 / 2 : kind == 1 ? t / n * 1e6
             : kind == 2 ? n / t : (double)n * size / t / 1e6;
    if (kind == 2 && f == med_rate) v = (double)((n + WINDOW - 1) / WINDOW * WINDOW) / t;
    if (kind == 3) v = (double)((n + LWINDOW - 1) / LWINDOW * LWINDOW) * size / t / 1e6;
    if (me == 0)
        printf("%s,%s,%zu,%.*f,%s\n", impl, test, size, kind >= 2 ? 0 : 3, v,
               kind == 2 ? "msg/s" : kind == 3 ? "MB/s" : "us");
    fflush(stdout);
}

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_Segment_t s;
    gex_Client_Init(&c, &ep, &tm, "gasnet_bench", &argc, &argv, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-i") && i + 1 < argc) impl = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) target_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) best = !strcmp(argv[++i], "best");
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    me = gex_TM_QueryRank(tm);
    if (gex_TM_QuerySize(tm) != 2) { fprintf(stderr, "gasnet_bench: run with 2 ranks\n"); gasnet_exit(2); }
    cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(me % (unsigned)gasnett_cpu_count(), &cs);
    sched_setaffinity(0, sizeof cs, &cs); /* as run.sh binds the peers: rank r on CPU r */
    gex_AM_Entry_t t[] = {
        {H_PING, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_PONG, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_MED, (gex_AM_Fn_t)med, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_MED_PONG, (gex_AM_Fn_t)med_pong, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_RATE, (gex_AM_Fn_t)rate, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_ACK, (gex_AM_Fn_t)ack, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_LONG, (gex_AM_Fn_t)lng, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_STREAM, (gex_AM_Fn_t)stream, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, 0, 0},
    };
    gex_EP_RegisterHandlers(ep, t, sizeof t / sizeof t[0]);
    gex_Segment_Attach(&s, tm, 4 << 20);
    gex_EP_QueryBoundSegmentNB(tm, 1 - me, &peer_seg, NULL, NULL, 0);
    buf = malloc((1 << 20) + 8192);
    memset(buf, 7, 64);
    memset(buf + 64, 1, 64);
    memset(buf + 4096, 3, 1 << 20);
    if (me == 0) printf("# %s: gasnet_bench, %s\n", impl, GASNET_CONFIG_STRING);
    point("am_short_lat", short_lat, 0, 0);
    point("latency", med_lat, 8, 0);
    point("msgrate", med_rate, 8, 2);
    point("msgrate_stream", med_stream, 8, 2);
    for (size_t sz = 4096; sz <= (1 << 20); sz *= 4) point("am_long_bw", long_bw, sz, 3);
    point("put_lat", put_lat, 8, 1);
    point("get_lat", get_lat, 8, 1);
    point("put_rate", put_rate, 8, 2);
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    long b = bad;
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &b, (long *)&bad, GEX_DT_I64, 8, 1, GEX_OP_MAX, 0, 0, 0));
    if (b) { fprintf(stderr, "gasnet_bench: wrong data\n"); gasnet_exit(3); }
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(0);
    return 0;
}
