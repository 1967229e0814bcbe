/* gasnet.h -- the GASNet-1 interface of gasnet-shim, for clients written to GASNet-1 or
 * mixing it with GASNet-EX (GEX_FLAG_USES_GASNET1): gasnet_init/attach, the numbered
 * gasnet_AM* calls, gasnet_hsl_t, gasnet_mynode/nodes, gasnet_getSegmentInfo, ... */
#ifndef _GASNET_H
#define _GASNET_H
#define _INCLUDED_GASNET_H
#include "gasnetex.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef gex_Rank_t gasnet_node_t;
typedef gex_AM_Index_t gasnet_handler_t;
typedef gex_AM_Arg_t gasnet_handlerarg_t;
typedef gex_Token_t gasnet_token_t;
typedef gex_RMA_Value_t gasnet_register_value_t;
typedef struct { gex_AM_Index_t index; void (*fnptr)(); } gasnet_handlerentry_t;
typedef gex_HSL_t gasnet_hsl_t;
#define GASNET_HSL_INITIALIZER GEX_HSL_INITIALIZER

extern int gasnet_init(int *argc, char ***argv);
#define gasnet_init(argc, argv) (gasnetc_thread_model(GASNETC_SEQ_CLIENT), (gasnet_init)(argc, argv))
extern int gasnet_attach(gasnet_handlerentry_t *table, int numentries, uintptr_t segsize,
                         uintptr_t minheapoffset);
extern gex_Rank_t gasnet_mynode(void);
extern gex_Rank_t gasnet_nodes(void);
extern int gasnet_getSegmentInfo(gasnet_seginfo_t *seginfo_table, int numentries);
extern uintptr_t gasnet_getMaxLocalSegmentSize(void);
extern uintptr_t gasnet_getMaxGlobalSegmentSize(void);
extern int gasnet_AMGetMsgSource(gex_Token_t token, gex_Rank_t *srcindex);

#define gasnet_AMMaxArgs()         ((size_t)gex_AM_MaxArgs())
#define gasnet_AMMaxMedium()       gex_AM_LUBRequestMedium()
#define gasnet_AMMaxLongRequest()  gex_AM_LUBRequestLong()
#define gasnet_AMMaxLongReply()    gex_AM_LUBReplyLong()

#define gasnet_hsl_init(phsl)    gex_HSL_Init(phsl)
#define gasnet_hsl_destroy(phsl) gex_HSL_Destroy(phsl)
#define gasnet_hsl_lock(phsl)    gex_HSL_Lock(phsl)
#define gasnet_hsl_unlock(phsl)  gex_HSL_Unlock(phsl)
#define gasnet_hsl_trylock(phsl) gex_HSL_Trylock(phsl)
#define gasnet_hold_interrupts()   ((void)0)
#define gasnet_resume_interrupts() ((void)0)
#define gasnet_set_waitmode(mode)  GASNET_OK
#define GASNET_WAIT_SPIN      0
#define GASNET_WAIT_BLOCK     1
#define GASNET_WAIT_SPINBLOCK 2
#define GASNET_BEGIN_FUNCTION() ((void)0)
#define GASNET_POST_THREADINFO(info) ((void)0)
#define GASNET_GET_THREADINFO() ((void *)0)
#define gasnet_AMPoll_() gasnet_AMPoll()

#ifdef __cplusplus
}
#endif
#include "gasnet_skifch_am1.h"
#endif /* _GASNET_H */

/* ---- GASNet-1 extended API: put/get over the gex_RMA_* calls ------------------------- */
#ifndef GASNET_SKIFCH_LEGACY_EXT
#define GASNET_SKIFCH_LEGACY_EXT
typedef gex_Event_t gasnet_handle_t;
#define GASNET_INVALID_HANDLE ((gasnet_handle_t)0)
#define gasnet_put(node, dest, src, nbytes) \
    ((void)gex_RMA_PutBlocking(gasnetc_world_tm(), (node), (dest), (src), (nbytes), 0))
#define gasnet_put_bulk gasnet_put
#define gasnet_get(dest, node, src, nbytes) \
    ((void)gex_RMA_GetBlocking(gasnetc_world_tm(), (dest), (node), (src), (nbytes), 0))
#define gasnet_get_bulk gasnet_get
#define gasnet_put_nb(node, dest, src, nbytes) \
    gex_RMA_PutNB(gasnetc_world_tm(), (node), (dest), (src), (nbytes), GEX_EVENT_NOW, 0)
#define gasnet_put_nb_bulk(node, dest, src, nbytes) \
    gex_RMA_PutNB(gasnetc_world_tm(), (node), (dest), (src), (nbytes), GEX_EVENT_DEFER, 0)
#define gasnet_get_nb(dest, node, src, nbytes) \
    gex_RMA_GetNB(gasnetc_world_tm(), (dest), (node), (src), (nbytes), 0)
#define gasnet_get_nb_bulk gasnet_get_nb
#define gasnet_put_nbi(node, dest, src, nbytes) \
    ((void)gex_RMA_PutNBI(gasnetc_world_tm(), (node), (dest), (src), (nbytes), GEX_EVENT_NOW, 0))
#define gasnet_put_nbi_bulk gasnet_put_nbi
#define gasnet_get_nbi(dest, node, src, nbytes) \
    ((void)gex_RMA_GetNBI(gasnetc_world_tm(), (dest), (node), (src), (nbytes), 0))
#define gasnet_get_nbi_bulk gasnet_get_nbi
#define gasnet_put_val(node, dest, value, nbytes) \
    ((void)gex_RMA_PutBlockingVal(gasnetc_world_tm(), (node), (dest), (value), (nbytes), 0))
#define gasnet_put_nb_val(node, dest, value, nbytes) \
    gex_RMA_PutNBVal(gasnetc_world_tm(), (node), (dest), (value), (nbytes), 0)
#define gasnet_put_nbi_val(node, dest, value, nbytes) \
    ((void)gex_RMA_PutNBIVal(gasnetc_world_tm(), (node), (dest), (value), (nbytes), 0))
#define gasnet_get_val(node, src, nbytes) \
    gex_RMA_GetBlockingVal(gasnetc_world_tm(), (node), (src), (nbytes), 0)
#define gasnet_wait_syncnb(h) gex_Event_Wait(h)
#define gasnet_try_syncnb(h) gex_Event_Test(h)
#define gasnet_wait_syncnb_all(ph, n) gex_Event_WaitAll((ph), (n), 0)
#define gasnet_wait_syncnb_some(ph, n) gex_Event_WaitSome((ph), (n), 0)
#define gasnet_try_syncnb_all(ph, n) gex_Event_TestAll((ph), (n), 0)
#define gasnet_try_syncnb_some(ph, n) gex_Event_TestSome((ph), (n), 0)
#define gasnet_wait_syncnbi_all() gex_NBI_Wait(GEX_EC_ALL, 0)
#define gasnet_wait_syncnbi_puts() gex_NBI_Wait(GEX_EC_PUT, 0)
#define gasnet_wait_syncnbi_gets() gex_NBI_Wait(GEX_EC_GET, 0)
#define gasnet_try_syncnbi_all() gex_NBI_Test(GEX_EC_ALL, 0)
#define gasnet_try_syncnbi_puts() gex_NBI_Test(GEX_EC_PUT, 0)
#define gasnet_try_syncnbi_gets() gex_NBI_Test(GEX_EC_GET, 0)
#define gasnet_begin_nbi_accessregion() gex_NBI_BeginAccessRegion(0)
#define gasnet_end_nbi_accessregion() gex_NBI_EndAccessRegion(0)
#endif
