/* The GASNet-1 interface: gasnet_init/attach with a gasnet_handlerentry_t table (one
 * index left to the library), gasnet_AMRequest/Reply* Short/Medium/Long, AMGetMsgSource,
 * gasnet_getSegmentInfo, and the legacy barrier with matching and mismatching ids, the
 * ANONYMOUS and MISMATCH flags, and barrier_try. Then gasnet_exit(code) from one rank
 * ends the whole job with that code (argv[1] = "exit7"). */
#include <unistd.h>
#include "check.h"
#include <gasnet.h>
static gasnett_atomic_t got = gasnett_atomic_init(0);
static gasnet_seginfo_t *si;
static void req(gasnet_token_t t, void *buf, size_t n, gasnet_handlerarg_t a0, gasnet_handlerarg_t a1) {
    gasnet_node_t src; gasnet_AMGetMsgSource(t, &src);
    CHECK(a0 == (gasnet_handlerarg_t)n && a1 == (gasnet_handlerarg_t)src);
    for (size_t i = 0; i < n; i++) CHECK(((char *)buf)[i] == (char)(i + src));
    gasnet_AMReplyShort2(t, 201, a0, a1);
}
static void rep(gasnet_token_t t, gasnet_handlerarg_t a0, gasnet_handlerarg_t a1) { (void)t; (void)a0; (void)a1; gasnett_atomic_increment(&got, 0); }
static void lreq(gasnet_token_t t, void *buf, size_t n, gasnet_handlerarg_t a0) {
    gasnet_node_t src; gasnet_AMGetMsgSource(t, &src);
    CHECK(buf == (char *)si[gasnet_mynode()].addr + 128 && (size_t)a0 == n);
    for (size_t i = 0; i < n; i++) CHECK(((char *)buf)[i] == (char)(i * 3));
    gasnet_AMReplyShort2(t, 201, 0, 0);
}
int main(int argc, char **argv) {
    CHECK(gasnet_init(&argc, &argv) == GASNET_OK);
    gasnet_handlerentry_t t[] = {{200, (void (*)())req}, {201, (void (*)())rep}, {0, (void (*)())lreq}};
    CHECK(gasnet_attach(t, 3, 1 << 20, 0) == GASNET_OK);
    CHECK(t[2].index != 0);
    gasnet_node_t me = gasnet_mynode(), n = gasnet_nodes(), peer = (me + 1) % n;
    si = malloc(n * sizeof *si);
    CHECK(gasnet_getSegmentInfo(si, n) == GASNET_OK && si[me].size >= (1 << 20));
    BARRIER(); /* a peer's Long handler reads si */
    char buf[2000];
    for (int i = 0; i < 2000; i++) buf[i] = (char)(i + me);
    gasnet_AMRequestShort2(peer, 200 + 1, 0, 0); /* a Short straight to the reply handler */
    CHECK(gasnet_AMRequestMedium2(peer, 200, buf, 2000, 2000, me) == GASNET_OK);
    GASNET_BLOCKUNTIL(gasnett_atomic_read(&got, 0) == 2);
    for (int i = 0; i < 2000; i++) buf[i] = (char)(i * 3);
    CHECK(gasnet_AMRequestLong1(peer, t[2].index, buf, 2000, (char *)si[peer].addr + 128, 2000) == GASNET_OK);
    GASNET_BLOCKUNTIL(gasnett_atomic_read(&got, 0) == 3);
    CHECK(gasnet_AMMaxArgs() >= 16 && gasnet_AMMaxMedium() >= 512 && gasnet_AMMaxLongRequest() >= 65536);
    /* Barriers: matching ids, anonymous mixed with named, a mismatch, the MISMATCH flag. */
    gasnet_barrier_notify(5, 0);
    CHECK(gasnet_barrier_wait(5, 0) == GASNET_OK);
    gasnet_barrier_notify(6, me == 0 ? 0 : GASNET_BARRIERFLAG_ANONYMOUS);
    CHECK(gasnet_barrier_wait(6, me == 0 ? 0 : GASNET_BARRIERFLAG_ANONYMOUS) == GASNET_OK);
    gasnet_barrier_notify((int)me, 0);
    CHECK(gasnet_barrier_wait((int)me, 0) == GASNET_ERR_BARRIER_MISMATCH);
    gasnet_barrier_notify(1, me == n - 1 ? GASNET_BARRIERFLAG_MISMATCH : 0);
    CHECK(gasnet_barrier_wait(1, 0) == GASNET_ERR_BARRIER_MISMATCH);
    gasnet_barrier_notify(9, 0);
    CHECK(gasnet_barrier_wait(8, 0) == GASNET_ERR_BARRIER_MISMATCH); /* wait's id differs */
    gasnet_barrier_notify(3, GASNET_BARRIERFLAG_ANONYMOUS);
    int r;
    while ((r = gasnet_barrier_try(3, GASNET_BARRIERFLAG_ANONYMOUS)) == GASNET_ERR_NOT_READY) gasnet_AMPoll();
    CHECK(r == GASNET_OK);
    CHECK(gasnet_barrier(11, 0) == GASNET_OK);
    if (argc > 1 && !strcmp(argv[1], "exit7")) {
        if (me == n - 1) gasnet_exit(7);
        for (;;) { gasnet_AMPoll(); usleep(1000); } /* ended by the other rank's exit */
    }
    if (me == 0) printf("legacy: ok\n");
    gasnet_exit(0);
    return 1;
}
