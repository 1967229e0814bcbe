/* Bad input ends the job with a message naming the call (argv[1] picks the case):
 * long_outside (a Long beyond the target's segment), unregistered (a handler index with
 * no handler), medium_too_large (a Medium above gex_AM_MaxRequestMedium), put_outside,
 * get_outside (RMA beyond the target's segment), legacy_unregistered (the same through a
 * GASNet-1 name), reply_too_large (a request handler's Medium reply above the maximum),
 * fatalerror (gasnett_fatalerror: its message, and a backtrace with GASNET_BACKTRACE=1). */
#include "check.h"
#include <gasnet.h>
static char buf[1 << 20];
static gex_TM_t tm;
static void h(gex_Token_t t, void *b, size_t n) { (void)t; (void)b; (void)n; }
static void big_reply(gex_Token_t t) {
    gex_Token_Info_t info;
    gex_Token_Info(t, &info, GEX_TI_SRCRANK);
    size_t max = gex_AM_MaxReplyMedium(tm, info.gex_srcrank, GEX_EVENT_NOW, 0, 0);
    gex_AM_ReplyMedium0(t, 202, buf, max + 1, GEX_EVENT_NOW, 0);
}
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_Segment_t seg;
    gex_Client_Init(&c, &ep, &tm, "bad", &argc, &argv, 0);
    gex_Segment_Attach(&seg, tm, 1 << 16);
    gex_AM_Entry_t t[] = {
        {200, (gex_AM_Fn_t)h, GEX_FLAG_AM_MEDLONG | GEX_FLAG_AM_REQUEST, 0, 0, "h"},
        {201, (gex_AM_Fn_t)big_reply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, 0, "big_reply"},
        {202, (gex_AM_Fn_t)h, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 0, 0, "h_reply"}};
    gex_EP_RegisterHandlers(ep, t, 3);
    gex_Rank_t peer = (gex_TM_QueryRank(tm) + 1) % gex_TM_QuerySize(tm);
    void *pseg; uintptr_t psz;
    gex_EP_QueryBoundSegmentNB(tm, peer, &pseg, NULL, &psz, 0);
    BARRIER();
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "long_outside"))
        gex_AM_RequestLong0(tm, peer, 200, buf, 100, (char *)pseg + psz - 50, GEX_EVENT_NOW, 0);
    else if (!strcmp(what, "unregistered"))
        gex_AM_RequestShort0(tm, peer, 99, 0);
    else if (!strcmp(what, "medium_too_large"))
        gex_AM_RequestMedium0(tm, peer, 200, buf, gex_AM_MaxRequestMedium(tm, peer, GEX_EVENT_NOW, 0, 0) + 1, GEX_EVENT_NOW, 0);
    else if (!strcmp(what, "put_outside"))
        gex_RMA_PutBlocking(tm, peer, (char *)pseg + psz - 8, buf, 16, 0);
    else if (!strcmp(what, "get_outside"))
        gex_Event_Wait(gex_RMA_GetNB(tm, buf, peer, (char *)pseg - 8, 16, 0));
    else if (!strcmp(what, "legacy_unregistered"))
        gasnet_AMRequestShort0(peer, 99);
    else if (!strcmp(what, "reply_too_large")) {
        gex_AM_RequestShort0(tm, peer, 201, 0);
        for (;;) gasnet_AMPoll(); /* until the peer's failure ends the job */
    } else if (!strcmp(what, "fatalerror") && gex_TM_QueryRank(tm) == 0)
        gasnett_fatalerror("code %d", 42);
    printf("rank %u: returned\n", gex_TM_QueryRank(tm));
    BARRIER();
    gasnet_exit(0);
    return 0;
}
