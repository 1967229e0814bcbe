/* gasnet_skifch_ext.h -- the extended API of gasnet-shim as built: RMA put/get
 * (Blocking/NB/NBI and Val forms), events, NBI and access regions, the non-blocking
 * barrier. Included by gasnetex.h. */
#ifndef GASNET_SKIFCH_EXT_H
#define GASNET_SKIFCH_EXT_H
#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t gex_EC_t;
#define GEX_EC_GET ((gex_EC_t)1)
#define GEX_EC_PUT ((gex_EC_t)2)
#define GEX_EC_AM  ((gex_EC_t)4)
#define GEX_EC_LC  ((gex_EC_t)8)
#define GEX_EC_RMW ((gex_EC_t)16)
#define GEX_EC_ALL ((gex_EC_t)31)

/* RMA: the destination (put) or source (get) address is in the remote rank's segment, in
 * its address space. Every operation is locally complete at return. */
extern int gex_RMA_PutBlocking(gex_TM_t tm, gex_Rank_t rank, void *dest, const void *src,
                               size_t nbytes, gex_Flags_t flags);
extern gex_Event_t gex_RMA_PutNB(gex_TM_t tm, gex_Rank_t rank, void *dest, const void *src,
                                 size_t nbytes, gex_Event_t *lc_opt, gex_Flags_t flags);
extern int gex_RMA_PutNBI(gex_TM_t tm, gex_Rank_t rank, void *dest, const void *src,
                          size_t nbytes, gex_Event_t *lc_opt, gex_Flags_t flags);
extern int gex_RMA_GetBlocking(gex_TM_t tm, void *dest, gex_Rank_t rank, void *src,
                               size_t nbytes, gex_Flags_t flags);
extern gex_Event_t gex_RMA_GetNB(gex_TM_t tm, void *dest, gex_Rank_t rank, void *src,
                                 size_t nbytes, gex_Flags_t flags);
extern int gex_RMA_GetNBI(gex_TM_t tm, void *dest, gex_Rank_t rank, void *src,
                          size_t nbytes, gex_Flags_t flags);
extern int gex_RMA_PutBlockingVal(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                  gex_RMA_Value_t value, size_t nbytes, gex_Flags_t flags);
extern gex_Event_t gex_RMA_PutNBVal(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                    gex_RMA_Value_t value, size_t nbytes, gex_Flags_t flags);
extern int gex_RMA_PutNBIVal(gex_TM_t tm, gex_Rank_t rank, void *dest,
                             gex_RMA_Value_t value, size_t nbytes, gex_Flags_t flags);
extern gex_RMA_Value_t gex_RMA_GetBlockingVal(gex_TM_t tm, gex_Rank_t rank, void *src,
                                              size_t nbytes, gex_Flags_t flags);

/* Events. */
extern int gex_Event_Test(gex_Event_t event);
extern void gex_Event_Wait(gex_Event_t event);
extern int gex_Event_TestAll(gex_Event_t *pevent, size_t numevents, gex_Flags_t flags);
extern int gex_Event_TestSome(gex_Event_t *pevent, size_t numevents, gex_Flags_t flags);
extern void gex_Event_WaitAll(gex_Event_t *pevent, size_t numevents, gex_Flags_t flags);
extern void gex_Event_WaitSome(gex_Event_t *pevent, size_t numevents, gex_Flags_t flags);
extern gex_Event_t gex_Event_QueryLeaf(gex_Event_t root, gex_EC_t event_category);

/* Implicit operations and access regions. */
extern int gex_NBI_Test(gex_EC_t event_mask, gex_Flags_t flags);
extern void gex_NBI_Wait(gex_EC_t event_mask, gex_Flags_t flags);
extern void gex_NBI_BeginAccessRegion(gex_Flags_t flags);
extern gex_Event_t gex_NBI_EndAccessRegion(gex_Flags_t flags);

/* Data types and operators of reductions and remote atomics. A fetching operator is
 * its non-fetching one shifted left by 10. */
typedef uint32_t gex_DT_t;
#define GEX_DT_I32  ((gex_DT_t)1)
#define GEX_DT_U32  ((gex_DT_t)2)
#define GEX_DT_I64  ((gex_DT_t)4)
#define GEX_DT_U64  ((gex_DT_t)8)
#define GEX_DT_FLT  ((gex_DT_t)16)
#define GEX_DT_DBL  ((gex_DT_t)32)
#define GEX_DT_USER ((gex_DT_t)64)
typedef uint32_t gex_OP_t;
#define GEX_OP_SET   (1u << 0)
#define GEX_OP_GET   (1u << 1)
#define GEX_OP_SWAP  (1u << 2)
#define GEX_OP_FCAS  (1u << 3)
#define GEX_OP_CAS   (1u << 4)
#define GEX_OP_AND   (1u << 5)
#define GEX_OP_OR    (1u << 6)
#define GEX_OP_XOR   (1u << 7)
#define GEX_OP_ADD   (1u << 8)
#define GEX_OP_SUB   (1u << 9)
#define GEX_OP_MULT  (1u << 10)
#define GEX_OP_MIN   (1u << 11)
#define GEX_OP_MAX   (1u << 12)
#define GEX_OP_INC   (1u << 13)
#define GEX_OP_DEC   (1u << 14)
#define GEX_OP_FAND  (1u << 15)
#define GEX_OP_FOR   (1u << 16)
#define GEX_OP_FXOR  (1u << 17)
#define GEX_OP_FADD  (1u << 18)
#define GEX_OP_FSUB  (1u << 19)
#define GEX_OP_FMULT (1u << 20)
#define GEX_OP_FMIN  (1u << 21)
#define GEX_OP_FMAX  (1u << 22)
#define GEX_OP_FINC  (1u << 23)
#define GEX_OP_FDEC  (1u << 24)
#define GEX_OP_USER    (1u << 25)
#define GEX_OP_USER_NC (1u << 26)
#define GEX_OP_CSWAP GEX_OP_FCAS
#define GEX_OP_TO_FETCHING(op)    ((op) << 10)
#define GEX_OP_TO_NONFETCHING(op) ((op) >> 10)
typedef struct { void *gex_addr; size_t gex_len; } gex_Memvec_t;

/* Teams. */
extern size_t gex_TM_Split(gex_TM_t *new_tm_p, gex_TM_t parent_tm, int color, int key,
                           void *scratch_addr, size_t scratch_size, gex_Flags_t flags);
extern int gex_TM_Destroy(gex_TM_t tm, gex_Memvec_t *scratch_p, gex_Flags_t flags);

/* Barrier. */
extern gex_Event_t gex_Coll_BarrierNB(gex_TM_t tm, gex_Flags_t flags);

#ifdef __cplusplus
}
#endif
#endif
