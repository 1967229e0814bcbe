/* gasnet_coll.h -- GASNet-EX collectives of gasnet-shim: barrier, broadcast, reductions
 * to one and to all (predefined types and operators, or a user function). Every member
 * of the team calls each one in the same order; each completes inside the initiating
 * call (the returned event is already complete). */
#ifndef _GASNET_COLL_H
#define _GASNET_COLL_H
#include "gasnetex.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef void (*gex_Coll_ReduceFn_t)(const void *arg1, void *arg2_and_out, size_t count,
                                    const void *cdata);
extern gex_Event_t gex_Coll_BarrierNB(gex_TM_t tm, gex_Flags_t flags);
extern gex_Event_t gex_Coll_BroadcastNB(gex_TM_t tm, gex_Rank_t root, void *dst,
                                        const void *src, size_t nbytes, gex_Flags_t flags);
extern gex_Event_t gex_Coll_ReduceToOneNB(gex_TM_t tm, gex_Rank_t root, void *dst,
                                          const void *src, gex_DT_t dt, size_t dt_sz,
                                          size_t dt_cnt, gex_OP_t op,
                                          gex_Coll_ReduceFn_t user_op, void *user_cdata,
                                          gex_Flags_t flags);
extern gex_Event_t gex_Coll_ReduceToAllNB(gex_TM_t tm, void *dst, const void *src,
                                          gex_DT_t dt, size_t dt_sz, size_t dt_cnt,
                                          gex_OP_t op, gex_Coll_ReduceFn_t user_op,
                                          void *user_cdata, gex_Flags_t flags);
#ifdef __cplusplus
}
#endif
#endif
