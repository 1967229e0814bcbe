/* GASNet-EX inside an MPI job (mpi-lite), in either order of initialisation (argv[1] =
 * "gasnet-first": GASNet joins the job and MPI uses its driver; else MPI first). Medium
 * round trips (every other request prepared: gex_AM_PrepareRequestMedium) to the next rank and a put into the previous rank's segment, each checked,
 * with MPI collectives in between; then MPI_Finalize while GASNet still runs (a barrier
 * and a last round trip), and gasnet_exit(0). */
#include <mpi.h>
#include "check.h"
#define H_REQ 200
#define H_REP 201
static gasnett_atomic_t replies = gasnett_atomic_init(0);
static gex_Rank_t me;
static void req(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0) {
    gex_Token_Info_t info;
    gex_Token_Info(t, &info, GEX_TI_SRCRANK);
    CHECK(len == (size_t)a0);
    for (size_t i = 0; i < len; i++) CHECK(((unsigned char *)buf)[i] == (unsigned char)(i + info.gex_srcrank));
    gex_AM_ReplyMedium1(t, H_REP, buf, len, GEX_EVENT_NOW, 0, a0);
}
static void rep(gex_Token_t t, void *buf, size_t len, gex_AM_Arg_t a0) {
    (void)t;
    CHECK(len == (size_t)a0);
    for (size_t i = 0; i < len; i++) CHECK(((unsigned char *)buf)[i] == (unsigned char)(i + me));
    gasnett_atomic_increment(&replies, 0);
}
static gex_AM_Entry_t table[] = {
    {H_REQ, (gex_AM_Fn_t)req, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, 0, "req"},
    {H_REP, (gex_AM_Fn_t)rep, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 1, 0, "rep"},
};
static void round_trips(gex_TM_t tm, gex_Rank_t peer, int count) {
    unsigned char buf[1000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i + me);
    for (int k = 0; k < count; k++) {
        size_t len = (size_t)(k * 37) % sizeof buf;
        if (k % 2) { /* negotiated payload: in place where the (possibly forwarded) driver reserves */
            gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestMedium(tm, peer, NULL, len, len, NULL, 0, 1);
            memcpy(gex_AM_SrcDescAddr(sd), buf, len);
            gex_AM_CommitRequestMedium1(sd, H_REQ, len, (gex_AM_Arg_t)len);
        } else {
            CHECK(gex_AM_RequestMedium1(tm, peer, H_REQ, buf, len, GEX_EVENT_NOW, 0, (gex_AM_Arg_t)len) == GASNET_OK);
        }
        GASNET_BLOCKUNTIL(gasnett_atomic_read(&replies, 0) == (gasnett_atomic_val_t)(k + 1));
    }
    gasnett_atomic_set(&replies, 0, 0);
    BARRIER(); /* a rank inside an MPI call does not run GASNet handlers */
}
int main(int argc, char **argv) {
    int gasnet_first = argc > 1 && !strcmp(argv[1], "gasnet-first");
    gex_Client_t client; gex_EP_t ep; gex_TM_t tm; gex_Segment_t segment;
    if (!gasnet_first) MPI_Init(&argc, &argv);
    CHECK(gex_Client_Init(&client, &ep, &tm, "with_mpi", &argc, &argv, 0) == GASNET_OK);
    if (gasnet_first) MPI_Init(&argc, &argv);
    int mr, ms;
    MPI_Comm_rank(MPI_COMM_WORLD, &mr);
    MPI_Comm_size(MPI_COMM_WORLD, &ms);
    me = gex_TM_QueryRank(tm);
    gex_Rank_t n = gex_TM_QuerySize(tm), next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(mr == (int)me && ms == (int)n && n >= 2);
    CHECK(gex_Segment_Attach(&segment, tm, 1 << 16) == GASNET_OK);
    CHECK(gex_EP_RegisterHandlers(ep, table, 2) == GASNET_OK);
    long *seg = gex_Segment_QueryAddr(segment);
    BARRIER();
    round_trips(tm, next, 50);
    long v = 1000 + me;
    void *prev_seg = 0, *local = 0; uintptr_t psize = 0;
    gex_EP_QueryBoundSegmentNB(tm, prev, &prev_seg, &local, &psize, 0);
    CHECK(prev_seg && psize >= (1 << 16));
    gex_RMA_PutBlocking(tm, prev, (long *)prev_seg + 1, &v, sizeof v, 0);
    BARRIER(); /* the put is complete at return; over the message path the target serves it while polling */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(seg[1] == 1000 + (long)next);
    int sum = 0, want = (int)(n * (n - 1) / 2);
    MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == want);
    round_trips(tm, prev, 20);
    MPI_Finalize(); /* GASNet keeps the process's driver */
    BARRIER();
    round_trips(tm, next, 20);
    BARRIER();
    if (me == 0) printf("gasnet+mpi (%s first): ok\n", gasnet_first ? "gasnet" : "mpi");
    gasnet_exit(0);
    return 1;
}
