/*
 * ucx_am_bench.c -- UCX active messages (UCP AM API) under gasnet_bench.c's protocols, so
 * that gasnet-shim's windowed AM Medium rate (issue 20, "Speed") has a like-for-like peer:
 * ucx_perftest's ucp_am_bw streams without a window and never pays the per-window ack
 * round trip that gasnet_bench's `msgrate` does. Two processes of this program (fork),
 * pinned to CPU 0 and CPU 1 as ../shared/peers/run.sh pins ucx_perftest, on UCX's default
 * transports of one host (shared memory); worker addresses and the pass commands go over
 * pipes, outside the timed region.
 *
 * Tests (CSV on stdout: impl,test,size,value,unit):
 *   latency        8  8-byte AM ping, 8-byte AM pong from the handler, half a round trip [us]
 *   msgrate        8  8-byte AMs, a window of 64, then one 0-byte ack AM sent by the
 *                     handler that counts the 64th (gasnet_bench's `msgrate`)      [msg/s]
 *   msgrate_stream 8  8-byte AMs back to back, one ack when the handler counted them
 *                     all (gasnet_bench's `msgrate_stream`; ucp_am_bw's protocol)  [msg/s]
 * Per point: a calibration pass (N doubles until a pass takes >= 50 ms), then REPS passes
 * adding up to TARGET seconds; the median (-s best: the fastest). Every payload is checked.
 *
 * Build: cc -O2 ucx_am_bench.c -o ucx_am_bench -lucp -lucs   (Debian: libucx-dev)
 * Usage: ./ucx_am_bench [-i IMPL] [-t TARGET_S] [-r REPS] [-s median|best]
 * Exit status: 0; 1 on a UCX error or a wrong byte (said on stderr).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

enum { WINDOW = 64, AM_PING = 1, AM_PONG, AM_RATE, AM_ACK, AM_STREAM };
enum { T_LAT, T_RATE, T_STREAM, T_EXIT };

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_ep_h ep;
static volatile long pongs, acks, got, bad;
static long stream_want;
static uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static int reps = 5, best = 0;
static double target_s = 0.3;
static const char *impl = "ucx-am";

static void die(const char *what, ucs_status_t st) {
    fprintf(stderr, "ucx_am_bench: %s: %s\n", what, ucs_status_string(st));
    exit(1);
}
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sends one AM; a request the send could not complete at once is progressed to the end
 * (8-byte AMs go eager and complete in place on shared memory). */
static void am_send(unsigned id, const void *data, size_t len) {
    ucp_request_param_t prm = {.op_attr_mask = 0};
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, NULL, 0, data, len, &prm);
    if (r == NULL) return;
    if (UCS_PTR_IS_ERR(r)) die("ucp_am_send_nbx", UCS_PTR_STATUS(r));
    ucs_status_t st;
    while ((st = ucp_request_check_status(r)) == UCS_INPROGRESS) ucp_worker_progress(worker);
    ucp_request_free(r);
    if (st != UCS_OK) die("ucp_am_send_nbx (completion)", st);
}
/* The send of a handler (ack, pong): it may not progress the worker (a callback runs
 * inside ucp_worker_progress), so a request left in flight is released to complete on its
 * own; the payload is the static one, which outlives it. */
static void am_send_cb(unsigned id, size_t len) {
    ucp_request_param_t prm = {.op_attr_mask = 0};
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, NULL, 0, payload, len, &prm);
    if (UCS_PTR_IS_ERR(r)) die("ucp_am_send_nbx (from a handler)", UCS_PTR_STATUS(r));
    if (r != NULL) ucp_request_free(r);
}
static int good(const void *data, size_t len) { return len == 8 && !memcmp(data, payload, 8); }

static ucs_status_t on_ping(void *arg, const void *h, size_t hl, void *data, size_t len,
                            const ucp_am_recv_param_t *p) {
    (void)arg, (void)h, (void)hl, (void)p;
    if (!good(data, len)) bad = 1;
    got++;
    am_send_cb(AM_PONG, 8);
    return UCS_OK;
}
static ucs_status_t on_pong(void *arg, const void *h, size_t hl, void *data, size_t len,
                            const ucp_am_recv_param_t *p) {
    (void)arg, (void)h, (void)hl, (void)p;
    if (!good(data, len)) bad = 1;
    pongs++;
    return UCS_OK;
}
static ucs_status_t on_rate(void *arg, const void *h, size_t hl, void *data, size_t len,
                            const ucp_am_recv_param_t *p) {
    (void)arg, (void)h, (void)hl, (void)p;
    if (!good(data, len)) bad = 1;
    if (++got % WINDOW == 0) am_send_cb(AM_ACK, 0);
    return UCS_OK;
}
static ucs_status_t on_stream(void *arg, const void *h, size_t hl, void *data, size_t len,
                              const ucp_am_recv_param_t *p) {
    (void)arg, (void)h, (void)hl, (void)p;
    if (!good(data, len)) bad = 1;
    if (++got == stream_want) am_send_cb(AM_ACK, 0);
    return UCS_OK;
}
static ucs_status_t on_ack(void *arg, const void *h, size_t hl, void *data, size_t len,
                           const ucp_am_recv_param_t *p) {
    (void)arg, (void)h, (void)hl, (void)data, (void)len, (void)p;
    acks++;
    return UCS_OK;
}

static void handler(unsigned id, ucp_am_recv_callback_t cb) {
    ucp_am_handler_param_t p = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB,
        .id = id,
        .cb = cb,
    };
    ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &p);
    if (st != UCS_OK) die("ucp_worker_set_am_recv_handler", st);
}

static void xwrite(int fd, const void *b, size_t n) {
    if (write(fd, b, n) != (ssize_t)n) { perror("ucx_am_bench: pipe write"); exit(1); }
}
static void xread(int fd, void *b, size_t n) {
    for (size_t got_n = 0; got_n < n;) {
        ssize_t r = read(fd, (char *)b + got_n, n - got_n);
        if (r <= 0) { perror("ucx_am_bench: pipe read"); exit(1); }
        got_n += (size_t)r;
    }
}

/* Context, worker, handlers, and the endpoint to the peer (addresses over the pipes). */
static void setup(int to, int from) {
    ucp_params_t cp = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_AM};
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) die("ucp_config_read", st);
    st = ucp_init(&cp, cfg, &ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) die("ucp_init", st);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if ((st = ucp_worker_create(ctx, &wp, &worker)) != UCS_OK) die("ucp_worker_create", st);
    handler(AM_PING, on_ping), handler(AM_PONG, on_pong), handler(AM_RATE, on_rate);
    handler(AM_STREAM, on_stream), handler(AM_ACK, on_ack);
    ucp_address_t *addr;
    size_t alen;
    if ((st = ucp_worker_get_address(worker, &addr, &alen)) != UCS_OK)
        die("ucp_worker_get_address", st);
    xwrite(to, &alen, sizeof alen);
    xwrite(to, addr, alen);
    size_t plen;
    xread(from, &plen, sizeof plen);
    void *peer = malloc(plen);
    if (!peer) { fprintf(stderr, "ucx_am_bench: out of memory\n"); exit(1); }
    xread(from, peer, plen);
    ucp_ep_params_t ep_p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                            .address = peer};
    if ((st = ucp_ep_create(worker, &ep_p, &ep)) != UCS_OK) die("ucp_ep_create", st);
    ucp_worker_release_address(worker, addr);
    free(peer);
}

/* Closes the endpoint (forced: the peer may have closed already), worker and context. */
static void teardown(void) {
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
    if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker);
        ucp_request_free(r);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
}

static void pin(int cpu) {
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(cpu, &cs);
    sched_setaffinity(0, sizeof cs, &cs);
}

/* Rank 0's passes: seconds for n iterations. */
static double pass(int test, long n) {
    double t0 = now();
    long base = acks;
    switch (test) {
    case T_LAT:
        for (long i = 0, p0 = pongs; i < n; i++) {
            am_send(AM_PING, payload, 8);
            while (pongs != p0 + i + 1) ucp_worker_progress(worker);
        }
        break;
    case T_RATE:
        for (long w = 0; w < (n + WINDOW - 1) / WINDOW; w++) {
            for (int i = 0; i < WINDOW; i++) am_send(AM_RATE, payload, 8);
            while (acks != base + w + 1) ucp_worker_progress(worker);
        }
        break;
    case T_STREAM:
        for (long i = 0; i < n; i++) am_send(AM_STREAM, payload, 8);
        while (acks != base + 1) ucp_worker_progress(worker);
        break;
    }
    return now() - t0;
}

/* Rank 1: serves the passes rank 0 commands (its handlers answer), until T_EXIT. */
static void serve(int to, int from) {
    for (;;) {
        long cmd[2];
        xread(from, cmd, sizeof cmd);
        if (cmd[0] == T_EXIT) return;
        got = 0;
        stream_want = cmd[1];
        xwrite(to, "r", 1);
        /* every message of the pass: pings, or the windows' AMs, or the stream's */
        long want = cmd[0] == T_RATE ? (cmd[1] + WINDOW - 1) / WINDOW * WINDOW : cmd[1];
        while (got < want) ucp_worker_progress(worker);
        xwrite(to, bad ? "b" : "d", 1);
    }
}

/* Rank 0: one pass of `test` over n iterations, rank 1 serving it. */
static double run_pass(int to, int from, int test, long n) {
    long cmd[2] = {test, n};
    char c;
    xwrite(to, cmd, sizeof cmd);
    xread(from, &c, 1); /* rank 1 is serving */
    double t = pass(test, n);
    xread(from, &c, 1); /* rank 1 took the whole pass */
    if (c == 'b') bad = 1;
    return t;
}

static void point(int to, int from, const char *name, int test) {
    long n = 1;
    double t;
    while ((t = run_pass(to, from, test, n)) < 0.05) n *= 2;
    long per = (long)((double)n * (target_s / reps) / 0.05);
    if (per < 1) per = 1;
    double v[64];
    for (int r = 0; r < reps; r++) v[r] = run_pass(to, from, test, per);
    qsort(v, (size_t)reps, sizeof v[0], cmp);
    t = best ? v[0] : v[reps / 2];
    long done = test == T_RATE ? (per + WINDOW - 1) / WINDOW * WINDOW : per;
    if (test == T_LAT)
        printf("%s,%s,8,%.3f,us\n", impl, name, t / per * 1e6 / 2);
    else
        printf("%s,%s,8,%.0f,msg/s\n", impl, name, done / t);
    fflush(stdout);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-i") && i + 1 < argc) impl = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) target_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) best = !strcmp(argv[++i], "best");
        else {
            fprintf(stderr, "usage: %s [-i IMPL] [-t TARGET_S] [-r REPS] [-s median|best]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    int down[2], up[2]; /* rank 0 -> rank 1, rank 1 -> rank 0 */
    if (pipe(down) || pipe(up)) { perror("ucx_am_bench: pipe"); return 1; }
    pid_t child = fork();
    if (child < 0) { perror("ucx_am_bench: fork"); return 1; }
    if (child == 0) {
        pin(1);
        setup(up[1], down[0]);
        serve(up[1], down[0]);
        teardown();
        _exit(bad ? 1 : 0);
    }
    pin(0);
    setup(down[1], up[0]);
    point(down[1], up[0], "latency", T_LAT);
    point(down[1], up[0], "msgrate", T_RATE);
    point(down[1], up[0], "msgrate_stream", T_STREAM);
    long cmd[2] = {T_EXIT, 0};
    xwrite(down[1], cmd, sizeof cmd);
    int status = 0;
    waitpid(child, &status, 0);
    teardown();
    if (bad || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "ucx_am_bench: a payload arrived wrong or rank 1 failed\n");
        return 1;
    }
    return 0;
}
