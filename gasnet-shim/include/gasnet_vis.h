/* gasnet_vis.h -- GASNet-EX non-contiguous put/get of gasnet-shim: vector, indexed and
 * strided (Blocking, NB, NBI), as macros over three entry points. Strided follows
 * GASNet-EX: count[d] elements of elemsz contiguous bytes along dimension d (0 fastest),
 * strides[d] bytes apart, d < stridelevels. Bytes a description does not name are never
 * touched. */
#ifndef _GASNET_VIS_H
#define _GASNET_VIS_H
#include "gasnetex.h"
#ifdef __cplusplus
extern "C" {
#endif
extern gex_Event_t gasnetc_vis_vector(int put, int mode, gex_TM_t tm, gex_Rank_t rank,
        size_t rcount, const gex_Memvec_t *rlist, size_t lcount, const gex_Memvec_t *llist,
        const char *call);
extern gex_Event_t gasnetc_vis_indexed(int put, int mode, gex_TM_t tm, gex_Rank_t rank,
        size_t rcount, void *const *rlist, size_t rlen, size_t lcount, void *const *llist,
        size_t llen, const char *call);
extern gex_Event_t gasnetc_vis_strided(int put, int mode, gex_TM_t tm, gex_Rank_t rank,
        void *raddr, const ptrdiff_t *rstrides, void *laddr, const ptrdiff_t *lstrides,
        size_t elemsz, const size_t *count, size_t stridelevels, const char *call);
/* Blocking and NBI forms return 0 (a call that fails ends the job). */
static inline int GASNETC_VIS_INT(gex_Event_t e) { (void)e; return 0; }

#define gex_VIS_VectorPutBlocking(tm, rank, dc, dl, sc, sl, fl) \
    GASNETC_VIS_INT(gasnetc_vis_vector(1, 0, tm, rank, dc, dl, sc, sl, "gex_VIS_VectorPutBlocking"))
#define gex_VIS_VectorPutNB(tm, rank, dc, dl, sc, sl, fl) \
    gasnetc_vis_vector(1, 1, tm, rank, dc, dl, sc, sl, "gex_VIS_VectorPutNB")
#define gex_VIS_VectorPutNBI(tm, rank, dc, dl, sc, sl, fl) \
    GASNETC_VIS_INT(gasnetc_vis_vector(1, 2, tm, rank, dc, dl, sc, sl, "gex_VIS_VectorPutNBI"))
#define gex_VIS_VectorGetBlocking(tm, dc, dl, rank, sc, sl, fl) \
    GASNETC_VIS_INT(gasnetc_vis_vector(0, 0, tm, rank, sc, sl, dc, dl, "gex_VIS_VectorGetBlocking"))
#define gex_VIS_VectorGetNB(tm, dc, dl, rank, sc, sl, fl) \
    gasnetc_vis_vector(0, 1, tm, rank, sc, sl, dc, dl, "gex_VIS_VectorGetNB")
#define gex_VIS_VectorGetNBI(tm, dc, dl, rank, sc, sl, fl) \
    GASNETC_VIS_INT(gasnetc_vis_vector(0, 2, tm, rank, sc, sl, dc, dl, "gex_VIS_VectorGetNBI"))

#define gex_VIS_IndexedPutBlocking(tm, rank, dc, dl, dlen, sc, sl, slen, fl) \
    GASNETC_VIS_INT(gasnetc_vis_indexed(1, 0, tm, rank, dc, dl, dlen, sc, sl, slen, "gex_VIS_IndexedPutBlocking"))
#define gex_VIS_IndexedPutNB(tm, rank, dc, dl, dlen, sc, sl, slen, fl) \
    gasnetc_vis_indexed(1, 1, tm, rank, dc, dl, dlen, sc, sl, slen, "gex_VIS_IndexedPutNB")
#define gex_VIS_IndexedPutNBI(tm, rank, dc, dl, dlen, sc, sl, slen, fl) \
    GASNETC_VIS_INT(gasnetc_vis_indexed(1, 2, tm, rank, dc, dl, dlen, sc, sl, slen, "gex_VIS_IndexedPutNBI"))
#define gex_VIS_IndexedGetBlocking(tm, dc, dl, dlen, rank, sc, sl, slen, fl) \
    GASNETC_VIS_INT(gasnetc_vis_indexed(0, 0, tm, rank, sc, sl, slen, dc, dl, dlen, "gex_VIS_IndexedGetBlocking"))
#define gex_VIS_IndexedGetNB(tm, dc, dl, dlen, rank, sc, sl, slen, fl) \
    gasnetc_vis_indexed(0, 1, tm, rank, sc, sl, slen, dc, dl, dlen, "gex_VIS_IndexedGetNB")
#define gex_VIS_IndexedGetNBI(tm, dc, dl, dlen, rank, sc, sl, slen, fl) \
    GASNETC_VIS_INT(gasnetc_vis_indexed(0, 2, tm, rank, sc, sl, slen, dc, dl, dlen, "gex_VIS_IndexedGetNBI"))

#define gex_VIS_StridedPutBlocking(tm, rank, da, ds, sa, ss, esz, cnt, lv, fl) \
    GASNETC_VIS_INT(gasnetc_vis_strided(1, 0, tm, rank, da, ds, (void *)(sa), ss, esz, cnt, lv, "gex_VIS_StridedPutBlocking"))
#define gex_VIS_StridedPutNB(tm, rank, da, ds, sa, ss, esz, cnt, lv, fl) \
    gasnetc_vis_strided(1, 1, tm, rank, da, ds, (void *)(sa), ss, esz, cnt, lv, "gex_VIS_StridedPutNB")
#define gex_VIS_StridedPutNBI(tm, rank, da, ds, sa, ss, esz, cnt, lv, fl) \
    GASNETC_VIS_INT(gasnetc_vis_strided(1, 2, tm, rank, da, ds, (void *)(sa), ss, esz, cnt, lv, "gex_VIS_StridedPutNBI"))
#define gex_VIS_StridedGetBlocking(tm, da, ds, rank, sa, ss, esz, cnt, lv, fl) \
    GASNETC_VIS_INT(gasnetc_vis_strided(0, 0, tm, rank, sa, ss, da, ds, esz, cnt, lv, "gex_VIS_StridedGetBlocking"))
#define gex_VIS_StridedGetNB(tm, da, ds, rank, sa, ss, esz, cnt, lv, fl) \
    gasnetc_vis_strided(0, 1, tm, rank, sa, ss, da, ds, esz, cnt, lv, "gex_VIS_StridedGetNB")
#define gex_VIS_StridedGetNBI(tm, da, ds, rank, sa, ss, esz, cnt, lv, fl) \
    GASNETC_VIS_INT(gasnetc_vis_strided(0, 2, tm, rank, sa, ss, da, ds, esz, cnt, lv, "gex_VIS_StridedGetNBI"))
#ifdef __cplusplus
}
#endif
#endif
