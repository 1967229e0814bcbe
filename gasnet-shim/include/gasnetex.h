/* gasnetex.h -- GASNet-EX (specification 0.13, the 2020+ releases) on SkifCh: gasnet-shim.
 *
 * Written for this project from the public GASNet-EX interface (names, types, constants
 * and calling conventions); no code of the GASNet distribution. Build with the flags of
 * the conduit fragments (skifch-seq.mak / gasnet-skifch-seq.pc, or -par), which define
 * exactly one of GASNET_SEQ / GASNET_PAR. What is built and what is not: the crate's
 * README; a call not built yet exists and ends the job with a message naming it.
 */
#ifndef _GASNETEX_H
#define _GASNETEX_H
#define _INCLUDED_GASNETEX_H

#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ------------------------------------------------------------- */
#if defined(GASNET_SEQ) && !defined(GASNET_PAR) && !defined(GASNET_PARSYNC)
  #undef GASNET_SEQ
  #define GASNET_SEQ 1
  #define GASNETI_THREAD_MODEL SEQ
#elif !defined(GASNET_SEQ) && defined(GASNET_PAR) && !defined(GASNET_PARSYNC)
  #undef GASNET_PAR
  #define GASNET_PAR 1
  #define GASNETI_THREAD_MODEL PAR
#elif !defined(GASNET_SEQ) && !defined(GASNET_PAR) && defined(GASNET_PARSYNC)
  #undef GASNET_PARSYNC
  #define GASNET_PARSYNC 1
  #define GASNETI_THREAD_MODEL PARSYNC
#else
  #error Client code must #define exactly one of (GASNET_PAR, GASNET_PARSYNC, GASNET_SEQ) before #including gasnetex.h (use the skifch-seq.mak or skifch-par.mak fragment)
#endif

#define GASNET_CONDUIT_SKIFCH 1
#define GASNET_CONDUIT_NAME skifch
#define GASNET_CONDUIT_NAME_STR "skifch"
#define GASNET_CORE_NAME SKIFCH
#define GASNET_CORE_NAME_STR "SKIFCH"
#define GASNET_EXTENDED_NAME SKIFCH
#define GASNET_EXTENDED_NAME_STR "SKIFCH"

#define GASNET_RELEASE_VERSION_MAJOR 2023
#define GASNET_RELEASE_VERSION_MINOR 9
#define GASNET_RELEASE_VERSION_PATCH 0
#define GASNETEX_API_VERSION 20230900
#define GEX_SPEC_VERSION_MAJOR 0
#define GEX_SPEC_VERSION_MINOR 13
#define GASNET_SPEC_VERSION_MAJOR 1
#define GASNET_SPEC_VERSION_MINOR 8
#define GASNET_VERSION GASNET_SPEC_VERSION_MAJOR

#ifndef GASNET_SEGMENT_FAST
  #define GASNET_SEGMENT_FAST 1
#endif
#if !defined(GASNET_DEBUG) && !defined(GASNET_NDEBUG)
  #define GASNET_NDEBUG 1
#endif
#define GASNET_ALIGNED_SEGMENTS 0
#define GASNET_MAXNODES 65535u
#define GASNET_PAGESIZE 4096
#define GASNET_PSHM 0
#define GASNET_HIDDEN_AM_CONCURRENCY_LEVEL 0
#define GASNET_NATIVE_NP_ALLOC_REQ_MEDIUM 0
/* Request Medium: written in place in the target's receive memory where the driver offers
 * it (shm), one copy at Commit elsewhere; the others always copy once. */
#define GASNETC_HAVE_NP_REQ_MEDIUM 1
#define GASNETC_HAVE_NP_REP_MEDIUM 0
#define GASNETC_HAVE_NP_REQ_LONG 0
#define GASNETC_HAVE_NP_REP_LONG 0
#define GASNET_SUPPORTS_VIS 1
#define GASNET_MAXEPS 32
#define GASNET_CONFIG_STRING "RELEASE=2023.9.0,SPEC=0.13,CONDUIT=SKIFCH(SKIFCH-0.1/SKIFCH-0.1),THREADMODEL=" GASNETC_STR(GASNETI_THREAD_MODEL) ",SEGMENT=FAST,PTR=64bit,align,nopshm,nodebug,notrace,nostats,nodebugmalloc,nosrclines,timers_native,membars_native,atomics_native,atomic32_native,atomic64_native"
#define GASNETC_STR_(x) #x
#define GASNETC_STR(x) GASNETC_STR_(x)

/* ---- errors ---------------------------------------------------------------------- */
#define GASNET_OK 0
#define _GASNET_ERR_BASE 10000
#define GASNET_ERR_NOT_INIT         (_GASNET_ERR_BASE+1)
#define GASNET_ERR_RESOURCE         (_GASNET_ERR_BASE+2)
#define GASNET_ERR_BAD_ARG          (_GASNET_ERR_BASE+3)
#define GASNET_ERR_NOT_READY        (_GASNET_ERR_BASE+4)
#define GASNET_ERR_BARRIER_MISMATCH (_GASNET_ERR_BASE+5)
extern const char *gasnet_ErrorName(int);
extern const char *gasnet_ErrorDesc(int);

/* ---- core types ------------------------------------------------------------------ */
typedef uint8_t  gex_AM_Index_t;
typedef int32_t  gex_AM_Arg_t;
typedef uint32_t gex_Flags_t;
typedef uint32_t gex_Rank_t;
#define GEX_RANK_INVALID (~(gex_Rank_t)0)
typedef struct gasnetc_token_s   *gex_Token_t;
typedef struct gasnetc_team_s    *gex_TM_t;
typedef struct gasnetc_client_s  *gex_Client_t;
typedef struct gasnetc_ep_s      *gex_EP_t;
typedef struct gasnetc_segment_s *gex_Segment_t;
typedef struct gasnetc_srcdesc_s *gex_AM_SrcDesc_t;
typedef struct gasnetc_event_s   *gex_Event_t;
typedef uint32_t gex_EP_Index_t;
typedef uint32_t gex_EP_Capabilities_t;
typedef uint32_t gex_MK_t;
typedef uint32_t gex_TI_t;
typedef uintptr_t gex_RMA_Value_t;
#define SIZEOF_GEX_RMA_VALUE_T 8
#define GEX_TM_INVALID      ((gex_TM_t)0)
#define GEX_CLIENT_INVALID  ((gex_Client_t)0)
#define GEX_EP_INVALID      ((gex_EP_t)0)
#define GEX_SEGMENT_INVALID ((gex_Segment_t)0)
#define GEX_AM_SRCDESC_NO_OP ((gex_AM_SrcDesc_t)0)
#define GEX_MK_HOST ((gex_MK_t)0)
#define GEX_EVENT_INVALID ((gex_Event_t)(uintptr_t)0)
#define GEX_EVENT_NO_OP   ((gex_Event_t)(uintptr_t)1)
#define GEX_EVENT_NOW   ((gex_Event_t *)(uintptr_t)1)
#define GEX_EVENT_DEFER ((gex_Event_t *)(uintptr_t)2)
#define GEX_EVENT_GROUP ((gex_Event_t *)(uintptr_t)3)

typedef void (*gex_AM_Fn_t)();
typedef struct {
    gex_AM_Index_t gex_index;  /* 0 on input: any free index (written back) */
    gex_AM_Fn_t    gex_fnptr;
    gex_Flags_t    gex_flags;  /* GEX_FLAG_AM_{SHORT,MEDIUM,LONG,...} | {REQUEST,REPLY,...} */
    unsigned int   gex_nargs;
    const void    *gex_cdata;
    const char    *gex_name;
} gex_AM_Entry_t;

typedef struct {
    gex_Rank_t            gex_srcrank;
    gex_EP_t              gex_ep;
    const gex_AM_Entry_t *gex_entry;
    int                   gex_is_req;
    int                   gex_is_long;
} gex_Token_Info_t;
#define GEX_TI_SRCRANK ((gex_TI_t)1)
#define GEX_TI_EP      ((gex_TI_t)2)
#define GEX_TI_ENTRY   ((gex_TI_t)4)
#define GEX_TI_IS_REQ  ((gex_TI_t)8)
#define GEX_TI_IS_LONG ((gex_TI_t)16)
#define GEX_TI_ALL     ((gex_TI_t)31)

typedef struct { void *addr; uintptr_t size; } gasnet_seginfo_t;
typedef struct { void *addr; size_t len; } gasnet_memvec_t;

/* ---- flags ---------------------------------------------------------------------- */
#define GEX_FLAG_IMMEDIATE             (1U << 0)
#define GEX_FLAG_SRC_IN_SEGMENT        (1U << 1)
#define GEX_FLAG_SRC_IN_BOUND_SEGMENT ((1U << 2) | GEX_FLAG_SRC_IN_SEGMENT)
#define GEX_FLAG_DST_IN_SEGMENT        (1U << 4)
#define GEX_FLAG_DST_IN_BOUND_SEGMENT ((1U << 5) | GEX_FLAG_DST_IN_SEGMENT)
#define GEX_FLAG_AM_PREPARE_LEAST_CLIENT (1U << 7)
#define GEX_FLAG_AM_PREPARE_LEAST_ALLOC  (1U << 8)
#define GEX_FLAG_AM_SHORT   (1U << 0)
#define GEX_FLAG_AM_MEDIUM  (1U << 1)
#define GEX_FLAG_AM_LONG    (1U << 2)
#define GEX_FLAG_AM_MEDLONG (GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_LONG)
#define GEX_FLAG_AM_REQUEST (1U << 3)
#define GEX_FLAG_AM_REPLY   (1U << 4)
#define GEX_FLAG_AM_REQREP  (GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_REPLY)
#define GEX_FLAG_USES_GASNET1 (1U << 9)
#define GEX_FLAG_RANK_IS_JOBRANK (1U << 10)
#define GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED (1U << 11)
#define GEX_FLAG_TM_SCRATCH_SIZE_MIN (1U << 12)
#define GEX_FLAG_TM_GLOBAL_SCRATCH (1U << 13)
#define GEX_FLAG_TM_LOCAL_SCRATCH (1U << 14)
#define GEX_FLAG_TM_NO_SCRATCH (1U << 15)
#define GEX_FLAG_SELF_SEG_OFFSET 0
/* endpoint capabilities (gex_EP_Create) */
#define GEX_EP_CAPABILITY_RMA    ((gex_EP_Capabilities_t)1)
#define GEX_EP_CAPABILITY_AM     ((gex_EP_Capabilities_t)2)
#define GEX_EP_CAPABILITY_VIS    ((gex_EP_Capabilities_t)4)
#define GEX_EP_CAPABILITY_COLL   ((gex_EP_Capabilities_t)8)
#define GEX_EP_CAPABILITY_ATOMIC ((gex_EP_Capabilities_t)16)
#define GEX_EP_CAPABILITY_ALL    ((gex_EP_Capabilities_t)31)

/* ---- core calls ------------------------------------------------------------------- */
extern int gex_Client_Init(gex_Client_t *client_p, gex_EP_t *ep_p, gex_TM_t *tm_p,
                           const char *clientName, int *argc, char ***argv, gex_Flags_t flags);
/* The client's thread model goes to the library with its initialisation: a GASNET_SEQ
 * client's calls take no lock inside the library (one thread calls GASNet, as in
 * GASNet-EX's SEQ builds). The macros call the functions of the same name. */
extern void gasnetc_thread_model(int seq);
#ifdef GASNET_SEQ
#define GASNETC_SEQ_CLIENT 1
#else
#define GASNETC_SEQ_CLIENT 0
#endif
#define gex_Client_Init(...) (gasnetc_thread_model(GASNETC_SEQ_CLIENT), (gex_Client_Init)(__VA_ARGS__))
extern int gex_Segment_Attach(gex_Segment_t *segment_p, gex_TM_t tm, uintptr_t length);
extern void *gex_Segment_QueryAddr(gex_Segment_t seg);
extern uintptr_t gex_Segment_QuerySize(gex_Segment_t seg);
extern gex_Client_t gex_Segment_QueryClient(gex_Segment_t seg);
extern int gex_Segment_Create(gex_Segment_t *segment_p, gex_Client_t client, void *address,
                              uintptr_t length, gex_MK_t kind, gex_Flags_t flags);
extern int gex_EP_Create(gex_EP_t *ep_p, gex_Client_t client, gex_EP_Capabilities_t caps,
                         gex_Flags_t flags);
extern void gex_EP_BindSegment(gex_EP_t ep, gex_Segment_t segment, gex_Flags_t flags);
extern gex_Segment_t gex_EP_QuerySegment(gex_EP_t ep);
extern gex_EP_Index_t gex_EP_QueryIndex(gex_EP_t ep);
/* The team of job ranks from local_ep to the endpoint of index remote_ep_index of each
 * rank: AMs and RMA only (no collectives, atomic domains, VIS or negotiated payload). */
extern gex_TM_t gex_TM_Pair(gex_EP_t local_ep, gex_EP_Index_t remote_ep_index);
extern int gex_EP_PublishBoundSegment(gex_TM_t tm, gex_EP_t *eps, size_t num_eps, gex_Flags_t flags);
extern gex_Event_t gex_EP_QueryBoundSegmentNB(gex_TM_t tm, gex_Rank_t rank, void **owneraddr_p,
                                              void **localaddr_p, uintptr_t *size_p, gex_Flags_t flags);
extern int gex_EP_RegisterHandlers(gex_EP_t ep, gex_AM_Entry_t *table, size_t numentries);
extern gex_Client_t gex_EP_QueryClient(gex_EP_t ep);
extern const char *gex_Client_QueryName(gex_Client_t client);
extern gex_Rank_t gex_System_QueryJobRank(void);
extern gex_Rank_t gex_System_QueryJobSize(void);
extern gex_Rank_t gex_TM_QueryRank(gex_TM_t tm);
extern gex_Rank_t gex_TM_QuerySize(gex_TM_t tm);
extern gex_EP_t gex_TM_QueryEP(gex_TM_t tm);
extern gex_Client_t gex_TM_QueryClient(gex_TM_t tm);
extern gex_Rank_t gex_TM_TranslateRankToJobrank(gex_TM_t tm, gex_Rank_t rank);
extern gex_Rank_t gex_TM_TranslateJobrankToRank(gex_TM_t tm, gex_Rank_t jobrank);
extern void gasnet_exit(int exitcode);
extern gex_TM_t gasnetc_world_tm(void);

/* ---- active messages -------------------------------------------------------------- */
extern unsigned int gex_AM_MaxArgs(void);
extern size_t gex_AM_MaxRequestMedium(gex_TM_t tm, gex_Rank_t rank, const gex_Event_t *lc_opt,
                                      gex_Flags_t flags, unsigned int nargs);
extern size_t gex_AM_MaxReplyMedium(gex_TM_t tm, gex_Rank_t rank, const gex_Event_t *lc_opt,
                                    gex_Flags_t flags, unsigned int nargs);
extern size_t gex_AM_MaxRequestLong(gex_TM_t tm, gex_Rank_t rank, const gex_Event_t *lc_opt,
                                    gex_Flags_t flags, unsigned int nargs);
extern size_t gex_AM_MaxReplyLong(gex_TM_t tm, gex_Rank_t rank, const gex_Event_t *lc_opt,
                                  gex_Flags_t flags, unsigned int nargs);
extern size_t gex_Token_MaxReplyMedium(gex_Token_t token, const gex_Event_t *lc_opt,
                                       gex_Flags_t flags, unsigned int nargs);
extern size_t gex_Token_MaxReplyLong(gex_Token_t token, const gex_Event_t *lc_opt,
                                     gex_Flags_t flags, unsigned int nargs);
extern size_t gasnetc_am_lub_medium(void);
extern size_t gasnetc_am_lub_long(void);
#define gex_AM_LUBRequestMedium() gasnetc_am_lub_medium()
#define gex_AM_LUBReplyMedium()   gasnetc_am_lub_medium()
#define gex_AM_LUBRequestLong()   gasnetc_am_lub_long()
#define gex_AM_LUBReplyLong()     gasnetc_am_lub_long()
extern gex_TI_t gex_Token_Info(gex_Token_t token, gex_Token_Info_t *info, gex_TI_t mask);

/* The library's injection entry points (the numbered calls below are over these). */
extern int gasnetc_am_request(gex_TM_t tm, gex_Rank_t rank, gex_AM_Index_t handler, int cat,
                              const void *buf, size_t nbytes, void *dest, gex_Event_t *lc_opt,
                              gex_Flags_t flags, int nargs, const gex_AM_Arg_t *args,
                              const char *call);
extern int gasnetc_am_reply(gex_Token_t token, gex_AM_Index_t handler, int cat,
                            const void *buf, size_t nbytes, void *dest, gex_Event_t *lc_opt,
                            gex_Flags_t flags, int nargs, const gex_AM_Arg_t *args,
                            const char *call);
/* The common AM (Short or Medium, at most 6 arguments, no GEX_FLAG_IMMEDIATE): six
 * register arguments, the call named by the key (GASNETC_AMKEY) only if an error needs it;
 * the headers complete lc_opt (local completion is always at return). */
extern int gasnetc_am_request_fast(gex_TM_t tm, gex_Rank_t rank, unsigned int key,
                                   const void *buf, size_t nbytes, const gex_AM_Arg_t *args);
extern int gasnetc_am_reply_fast(gex_Token_t token, unsigned int key, const void *buf,
                                 size_t nbytes, const gex_AM_Arg_t *args);
#define GASNETC_AMKEY(h, cat, n, legacy) \
    ((unsigned int)(gex_AM_Index_t)(h) | (unsigned int)(cat) << 8 | (unsigned int)(n) << 16 | \
     (unsigned int)(legacy) << 24)
#define GASNETC_LC_DONE(lc) do { if ((uintptr_t)(lc) > 3) *(lc) = GEX_EVENT_INVALID; } while (0)
extern gex_AM_SrcDesc_t gasnetc_am_prepare(gex_TM_t tm, gex_Rank_t rank, gex_Token_t token,
                                           const void *client_buf, size_t least, size_t most,
                                           void *dest, gex_Event_t *lc_opt, gex_Flags_t flags,
                                           unsigned int nargs, int cat, const char *call);
extern void gasnetc_am_commit(gex_AM_SrcDesc_t sd, gex_AM_Index_t handler, size_t nbytes,
                              void *dest, int nargs, const gex_AM_Arg_t *args, const char *call);
extern void gasnetc_fatal(const char *call, const char *what);

#define gex_AM_PrepareRequestMedium(tm, rank, client_buf, least, most, lc_opt, flags, nargs) \
    gasnetc_am_prepare(tm, rank, 0, client_buf, least, most, 0, lc_opt, flags, nargs, 1, "gex_AM_PrepareRequestMedium")
#define gex_AM_PrepareReplyMedium(token, client_buf, least, most, lc_opt, flags, nargs) \
    gasnetc_am_prepare(0, 0, token, client_buf, least, most, 0, lc_opt, flags, nargs, 1, "gex_AM_PrepareReplyMedium")
#define gex_AM_PrepareRequestLong(tm, rank, client_buf, least, most, dest, lc_opt, flags, nargs) \
    gasnetc_am_prepare(tm, rank, 0, client_buf, least, most, dest, lc_opt, flags, nargs, 2, "gex_AM_PrepareRequestLong")
#define gex_AM_PrepareReplyLong(token, client_buf, least, most, dest, lc_opt, flags, nargs) \
    gasnetc_am_prepare(0, 0, token, client_buf, least, most, dest, lc_opt, flags, nargs, 2, "gex_AM_PrepareReplyLong")
extern void *gex_AM_SrcDescAddr(gex_AM_SrcDesc_t sd);
extern size_t gex_AM_SrcDescSize(gex_AM_SrcDesc_t sd);

#include "gasnet_skifch_am.h"

/* ---- polling, blocking --------------------------------------------------------------- */
extern int gasnet_AMPoll(void);
extern void gasnetc_wait_step(int reset);
extern void gasnetc_wait_poll(unsigned int *polls);
#define GASNET_BLOCKUNTIL(cond) do { \
    unsigned int _gasnetc_polls = 0; \
    while (!(cond)) gasnetc_wait_poll(&_gasnetc_polls); } while (0)

/* ---- handler-safe locks: pthread mutexes (handlers run on the thread that polls) ---- */
typedef struct { pthread_mutex_t lock; } gex_HSL_t;
#define GEX_HSL_INITIALIZER { PTHREAD_MUTEX_INITIALIZER }
#define gex_HSL_Init(phsl)    ((void)pthread_mutex_init(&(phsl)->lock, 0))
#define gex_HSL_Destroy(phsl) ((void)pthread_mutex_destroy(&(phsl)->lock))
#define gex_HSL_Lock(phsl)    ((void)pthread_mutex_lock(&(phsl)->lock))
#define gex_HSL_Unlock(phsl)  ((void)pthread_mutex_unlock(&(phsl)->lock))
#define gex_HSL_Trylock(phsl) (pthread_mutex_trylock(&(phsl)->lock) ? GASNET_ERR_NOT_READY : GASNET_OK)

/* ---- barriers ------------------------------------------------------------------------- */
#define GASNET_BARRIERFLAG_ANONYMOUS 1
#define GASNET_BARRIERFLAG_MISMATCH  2
#define GASNET_BARRIERFLAG_UNNAMED   1
extern void gasnet_barrier_notify(int id, int flags);
extern int gasnet_barrier_wait(int id, int flags);
extern int gasnet_barrier_try(int id, int flags);
extern int gasnet_barrier(int id, int flags);

#ifdef __cplusplus
}
#endif

#include "gasnet_skifch_ext.h"

#endif /* _GASNETEX_H */
