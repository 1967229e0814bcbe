/*
 * gasnet_np_loop.c -- per-message instruction probe of negotiated-payload Medium requests
 * (gex_AM_PrepareRequestMedium + fill + gex_AM_CommitRequestMedium0) against plain
 * gex_AM_RequestMedium0 from a filled buffer, for callgrind: rank 0 sends N requests of
 * SIZE bytes to rank 1 in windows of 64 (rank 1's handler checks the bytes and acks every
 * 64th); nothing else. (Ir of rank 0 with 2N - with N) / N = instructions per request.
 *
 * Mode nplong: prepared Long requests of SIZE bytes into rank 1's segment (the library's
 * buffer: on the direct path, the destination itself), one at a time, each acknowledged.
 * Mode short: N round trips of RequestShort0 -> handler ReplyShort0 instead (SIZE unused):
 * the AM Short latency path, for the inclusive counts of its calls.
 * Modes put / get: N gex_RMA_PutBlocking / GetBlocking of SIZE bytes to rank 1's segment;
 * mode poll: N gasnet_AMPoll with nothing arriving (rank 1 waits in the barrier).
 *
 * Usage: skifrun -n 2 -- valgrind --tool=callgrind ./gasnet_np_loop N SIZE np|copy|nplong|short|put|get|poll
 * Build: with gasnet-shim's skifch-seq.mak fragment (scripts/gasnet-bench.sh shows how).
 * Exit status: 0, or 2 on a wrong byte or a bad argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gasnetex.h>
#include <gasnet_tools.h>

enum { H_REQ = 200, H_ACK, H_PING, H_LNG, WINDOW = 64 };
static volatile long acks, got, bad;

static void req(gex_Token_t t, void *buf, size_t n) {
    const uint8_t *b = buf;
    if (n && (b[0] != (uint8_t)n || b[n - 1] != (uint8_t)n)) bad = 1;
    if (++got % WINDOW == 0) gex_AM_ReplyShort0(t, H_ACK, 0);
}
static void ack(gex_Token_t t) { (void)t; acks++; }
static void ping(gex_Token_t t) { gex_AM_ReplyShort0(t, H_ACK, 0); }
static void lng(gex_Token_t t, void *buf, size_t n) {
    const uint8_t *b = buf;
    if (n && (b[0] != (uint8_t)n || b[n - 1] != (uint8_t)n)) bad = 1;
    gex_AM_ReplyShort0(t, H_ACK, 0);
}

int main(int argc, char **argv) {
    gex_Client_t cl; gex_EP_t ep; gex_TM_t tm;
    gex_Client_Init(&cl, &ep, &tm, "np_loop", &argc, &argv, 0);
    if (argc != 4 || gex_TM_QuerySize(tm) != 2) {
        fprintf(stderr, "usage: skifrun -n 2 ./gasnet_np_loop N SIZE np|copy|nplong|short|put|get|poll\n");
        gasnet_exit(2);
    }
    long n = atol(argv[1]);
    size_t size = (size_t)atol(argv[2]);
    int np = !strcmp(argv[3], "np");
    gex_AM_Entry_t t[] = {
        {H_REQ, (gex_AM_Fn_t)req, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_ACK, (gex_AM_Fn_t)ack, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, 0, 0},
        {H_PING, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, 0},
        {H_LNG, (gex_AM_Fn_t)lng, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 0, 0, 0},
    };
    gex_EP_RegisterHandlers(ep, t, 4);
    gex_Segment_t seg;
    void *peer_seg = NULL;
    gex_Segment_Attach(&seg, tm, 2 << 20);
    gex_EP_QueryBoundSegmentNB(tm, 1 - gex_TM_QueryRank(tm), &peer_seg, NULL, NULL, 0);
    uint8_t *src = malloc(size + 1);
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    if (gex_TM_QueryRank(tm) == 0 && !strcmp(argv[3], "nplong")) {
        for (long i = 0; i < n; i++) {
            gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestLong(tm, 1, NULL, size, size, peer_seg, NULL, 0, 0);
            memset(gex_AM_SrcDescAddr(sd), (int)(uint8_t)size, size);
            gex_AM_CommitRequestLong0(sd, H_LNG, size, NULL);
            GASNET_BLOCKUNTIL(acks == i + 1);
        }
    } else if (gex_TM_QueryRank(tm) == 0 && !strcmp(argv[3], "short")) {
        for (long i = 0; i < n; i++) {
            gex_AM_RequestShort0(tm, 1, H_PING, 0);
            GASNET_BLOCKUNTIL(acks == i + 1);
        }
    } else if (gex_TM_QueryRank(tm) == 0 && !strcmp(argv[3], "put")) {
        memset(src, (int)(uint8_t)size, size);
        for (long i = 0; i < n; i++) gex_RMA_PutBlocking(tm, 1, peer_seg, src, size, 0);
    } else if (gex_TM_QueryRank(tm) == 0 && !strcmp(argv[3], "get")) {
        for (long i = 0; i < n; i++) gex_RMA_GetBlocking(tm, src, 1, peer_seg, size, 0);
    } else if (gex_TM_QueryRank(tm) == 0 && !strcmp(argv[3], "poll")) {
        for (long i = 0; i < n; i++) gasnet_AMPoll();
    } else if (gex_TM_QueryRank(tm) == 0) {
        for (long w = 0; w < (n + WINDOW - 1) / WINDOW; w++) {
            for (int i = 0; i < WINDOW; i++) {
                if (np) {
                    gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestMedium(tm, 1, NULL, size, size, NULL, 0, 0);
                    memset(gex_AM_SrcDescAddr(sd), (int)(uint8_t)size, size);
                    gex_AM_CommitRequestMedium0(sd, H_REQ, size);
                } else {
                    memset(src, (int)(uint8_t)size, size);
                    gex_AM_RequestMedium0(tm, 1, H_REQ, src, size, GEX_EVENT_NOW, 0);
                }
            }
            GASNET_BLOCKUNTIL(acks == w + 1);
        }
    }
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    if (bad) { fprintf(stderr, "gasnet_np_loop: wrong data\n"); gasnet_exit(2); }
    gasnet_exit(0);
    return 0;
}
