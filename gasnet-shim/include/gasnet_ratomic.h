/* gasnet_ratomic.h -- GASNet-EX remote atomics of gasnet-shim: atomic domains and
 * gex_AD_OpNB/OpNBI/OpBlocking for I32, U32, I64, U64, FLT, DBL. Operations of all
 * ranks on one element are atomic with respect to each other (CPU atomics on the mapped
 * segment, or run by the target on the message path). */
#ifndef _GASNET_RATOMIC_H
#define _GASNET_RATOMIC_H
#include "gasnetex.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct gasnetc_ad_s *gex_AD_t;
#define GEX_AD_INVALID ((gex_AD_t)0)
#define GEX_FLAG_AD_FAVOR_MY_RANK (1U << 16)
#define GEX_FLAG_AD_FAVOR_MY_NBRHD (1U << 17)
#define GEX_FLAG_AD_FAVOR_REMOTE (1U << 18)
#define GEX_FLAG_AD_ACQ (1U << 19)
#define GEX_FLAG_AD_REL (1U << 20)
#define GEX_FLAG_AD_MY_RANK (1U << 21)
#define GEX_FLAG_AD_MY_NBRHD (1U << 22)
extern int gex_AD_Create(gex_AD_t *ad_p, gex_TM_t tm, gex_DT_t dt, gex_OP_t ops, gex_Flags_t flags);
extern void gex_AD_Destroy(gex_AD_t ad);
extern gex_TM_t gex_AD_QueryTM(gex_AD_t ad);
extern gex_DT_t gex_AD_QueryDT(gex_AD_t ad);
extern gex_OP_t gex_AD_QueryOps(gex_AD_t ad);
extern gex_Flags_t gex_AD_QueryFlags(gex_AD_t ad);
#define GASNETC_AD_TYPE(T, S) \
extern gex_Event_t gex_AD_OpNB_##S(gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr, \
                                   gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags); \
extern int gex_AD_OpNBI_##S(gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr, \
                            gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags); \
extern void gex_AD_OpBlocking_##S(gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr, \
                                  gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags);
GASNETC_AD_TYPE(int32_t, I32)
GASNETC_AD_TYPE(uint32_t, U32)
GASNETC_AD_TYPE(int64_t, I64)
GASNETC_AD_TYPE(uint64_t, U64)
GASNETC_AD_TYPE(float, FLT)
GASNETC_AD_TYPE(double, DBL)
#undef GASNETC_AD_TYPE
#ifdef __cplusplus
}
#endif
#endif
