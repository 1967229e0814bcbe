/* A waiting rank sleeps only as the wait policy says, and serves the AMs that arrive
 * meanwhile at once. Run under SKIFCH_WAIT=spin (a wait never sleeps; a spinning wait may
 * yield, which is not a voluntary context switch). A waiting rank counts its voluntary
 * context switches (getrusage(RUSAGE_THREAD): nanosleep, futex sleeps) over its wait:
 *  - every rank but 0 waits for a broadcast from rank 0 — in gex_Event_Wait, then in the
 *    split-phase barrier's wait while a broadcast runs — while rank 0, before it enters,
 *    makes ROUNDS AM Short round trips with each of them (a wait that napped when no
 *    collective step ran, though it served a request, slept about once a round trip);
 *  - rank 0 waits in GASNET_BLOCKUNTIL for replies that every other rank sends only after
 *    computing for COMPUTE_MS (a back-off that napped after its spins, whatever the
 *    policy, slept every 50 us of that). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD */
#endif
#include "check.h"
#include <gasnet_coll.h>
#include <stdint.h>
#include <sys/resource.h>

enum { H_PING = 200, H_PONG, H_GO, H_ANSWER, ROUNDS = 3000, LATE = 5, COMPUTE_MS = 10 };
static volatile long pongs, gos, answers;
static void on_ping(gex_Token_t t) { gex_AM_ReplyShort0(t, H_PONG, 0); }
static void on_pong(gex_Token_t t) { (void)t; pongs++; }
static void on_go(gex_Token_t t) { (void)t; gos++; }
static void on_answer(gex_Token_t t) { (void)t; answers++; }

static long sleeps(void) {
    struct rusage u;
    CHECK(getrusage(RUSAGE_THREAD, &u) == 0);
    return u.ru_nvcsw;
}

static gex_TM_t tm;
static gex_Rank_t me, n;

/* Rank 0: ROUNDS round trips with every other rank (each waits meanwhile). */
static void ping_all(void) {
    for (long i = 0; i < ROUNDS; i++)
        for (gex_Rank_t r = 1; r < n; r++) {
            long want = pongs + 1;
            gex_AM_RequestShort0(tm, r, H_PING, 0);
            GASNET_BLOCKUNTIL(pongs == want);
        }
}

/* Busy for `ms` milliseconds without a GASNet call. */
static void compute(int ms) {
    gasnett_tick_t t0 = gasnett_ticks_now();
    while (gasnett_ticks_to_ns(gasnett_ticks_now() - t0) < (uint64_t)ms * 1000000) {}
}

static void check_slept(const char *wait, long before) {
    long slept = sleeps() - before;
    CHECKF(slept < 50, "%s: slept %ld times", wait, slept);
}

int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_Segment_t s;
    gex_Client_Init(&c, &ep, &tm, "nbwait", &argc, &argv, 0);
    gex_AM_Entry_t tab[] = {
        {H_PING, (gex_AM_Fn_t)on_ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_PONG, (gex_AM_Fn_t)on_pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_GO, (gex_AM_Fn_t)on_go, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_ANSWER, (gex_AM_Fn_t)on_answer, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
    };
    gex_EP_RegisterHandlers(ep, tab, 4);
    gex_Segment_Attach(&s, tm, 1 << 16);
    me = gex_TM_QueryRank(tm);
    n = gex_TM_QuerySize(tm);
    const char *w = getenv("SKIFCH_WAIT");
    CHECKF(w && !strcmp(w, "spin"), "run with SKIFCH_WAIT=spin (got %s)", w ? w : "nothing");

    /* gex_Event_Wait on a broadcast the root has not entered. */
    int64_t x = me == 0 ? 77 : -1;
    if (me == 0) {
        ping_all();
        gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &x, &x, sizeof x, 0));
    } else {
        long before = sleeps();
        gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &x, &x, sizeof x, 0));
        check_slept("gex_Event_Wait of a broadcast", before);
    }
    CHECKF(x == 77, "broadcast got %lld", (long long)x);

    /* The split-phase barrier's wait while a broadcast runs (its wait advances it). */
    x = me == 0 ? 78 : -1;
    if (me == 0) {
        ping_all();
        gex_Event_t e = gex_Coll_BroadcastNB(tm, 0, &x, &x, sizeof x, 0);
        BARRIER();
        gex_Event_Wait(e);
    } else {
        gex_Event_t e = gex_Coll_BroadcastNB(tm, 0, &x, &x, sizeof x, 0);
        long before = sleeps();
        BARRIER();
        check_slept("gasnet_barrier_wait with a broadcast running", before);
        gex_Event_Wait(e);
    }
    CHECKF(x == 78, "broadcast got %lld", (long long)x);
    BARRIER();

    /* GASNET_BLOCKUNTIL for answers that come late. */
    if (me == 0) {
        long before = sleeps();
        for (int i = 0; i < LATE; i++) {
            long want = answers + (n - 1);
            for (gex_Rank_t r = 1; r < n; r++) gex_AM_RequestShort0(tm, r, H_GO, 0);
            GASNET_BLOCKUNTIL(answers == want);
        }
        check_slept("GASNET_BLOCKUNTIL for late replies", before);
    } else {
        for (int i = 0; i < LATE; i++) {
            GASNET_BLOCKUNTIL(gos == i + 1);
            compute(COMPUTE_MS);
            gex_AM_RequestShort0(tm, 0, H_ANSWER, 0);
        }
    }
    BARRIER();
    gasnet_exit(0);
    return 0;
}
