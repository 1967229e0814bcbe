/* gasnet_skifch_ext.h -- the extended API of gasnet-shim (RMA, events, NBI, collectives,
 * atomics, VIS): declared here as it is built. Included by gasnetex.h. */
#ifndef GASNET_SKIFCH_EXT_H
#define GASNET_SKIFCH_EXT_H
#endif
