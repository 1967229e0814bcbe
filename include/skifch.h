/*
 * skifch.h - the SkifCh channel interface, C ABI (libskifch.so / libskifch.a).
 *
 * Contract: SKIFCH-SPEC.md, sections "The core: three calls" and "The rest of the C ABI".
 * The core (Send, Recv, RecvComp) has exactly the names and types of the paper
 * (Klimov, Orlov, Shvorin, "SkifCh: high performance communication interface", 2011).
 *
 * Build and run (from the repository root):
 *   cargo build --release -p skifch-capi -p skifrun
 *   cc -I include prog.c -L target/release -lskifch -Wl,-rpath,$PWD/target/release -o prog
 *   target/release/skifrun -n 4 -- ./prog
 * Static:
 *   cc -I include prog.c target/release/libskifch.a \
 *      -lgcc_s -lutil -lrt -lpthread -lm -ldl -o prog
 *
 * Errors: calls return -1 (or NULL, or SKIFCH_ADDR_INVALID where stated) and set errno:
 *   EAGAIN        would block: nothing can be sent / no message is waiting; retry later
 *   EINVAL        bad argument (NULL pointer, negative count, iovec longer than 1024
 *                 parts, port out of range or already open, call outside Init..Finalize)
 *   EBADF         the channel was closed (SkifCh_Close): every call taking a channel
 *   EHOSTUNREACH  no such rank or port in the job, or the port was closed by its owner
 *                 (also: its rank has finalized)
 *   EMSGSIZE      a message can never fit the receiver
 *   EPIPE         a rank of the job was lost (died or exited without SkifCh_Finalize)
 *   EPROTO        corrupt shared state; the channel refuses further use
 *   ETIMEDOUT     SkifCh_Wait ran out of time
 *   EIO           internal error (a bug in the library; details on stderr)
 * Successful calls leave errno unchanged.
 *
 * Threads: a channel (struct SkifCh) is used by one thread at a time; different threads
 * may use different channels at once without any locking. Init, Finalize, Open, Rank,
 * Size and Addr may be called from any thread.
 */
#ifndef SKIFCH_H
#define SKIFCH_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this interface (0.1: the C ABI of SKIFCH-SPEC.md). */
#define SKIFCH_VERSION_MAJOR 0
#define SKIFCH_VERSION_MINOR 1

/** Address of one channel in a job: rank in the high 16 bits, port in the low 16 bits. */
typedef uint32_t netaddr_t;

/** An open channel (opaque). */
struct SkifCh;

/** Maximum number of segments of one received message (the shm driver uses at most 2:
 *  a message that wraps around the end of a receive ring). */
#define SKIFCH_CONT_SIZE 2

/** Returned by SkifCh_Addr / SkifCh_MyAddr for bad arguments; a send to it fails with
 *  EHOSTUNREACH. */
#define SKIFCH_ADDR_INVALID ((netaddr_t)0xFFFFFFFFu)

/* ---------------------------------------------------------------- the core: three calls */

/**
 * Sends ONE message formed from a prefix of the concatenation of iov[0..iov_count),
 * like writev: returns the number of bytes sent, which may be less than the total (the
 * library picks the size from the receiver's free space and the largest message). Advance
 * the iovec past the returned count and call again for the rest; the receiver sees one
 * message per successful call, in order.
 * Nothing is buffered: when no part can be sent now, returns -1/EAGAIN and has consumed
 * nothing. On success the caller's buffers may be reused at once.
 * A zero-length message is valid (iov_count 0, iov may then be NULL; or only empty parts):
 * returns 0. An iovec part may have a NULL base only if its length is 0.
 * Errors: EAGAIN, EINVAL (ch NULL, iov NULL with iov_count > 0, iov_count < 0 or > 1024),
 * EHOSTUNREACH (dst names no rank/port of the job, or a closed port), EPIPE (the
 * destination rank was lost), EPROTO.
 */
ssize_t SkifCh_Send(struct SkifCh *ch, netaddr_t dst_netaddr,
                    const struct iovec *iov, int iov_count);

/**
 * Receives the next message, non-blocking and without copying: fills cont[0..*cont_count)
 * with (pointer, length) pairs pointing into the library's receive memory and returns the
 * message length. The message is the concatenation of these segments, in order; every
 * segment is non-empty, so an empty message gives *cont_count == 0 (and returns 0).
 * cont need not be initialised. The memory stays valid and unchanged until the matching
 * SkifCh_RecvComp (or SkifCh_Close); several messages may be held at once.
 * Messages from one sending channel arrive in send order; senders interleave arbitrarily.
 * Errors: EAGAIN (no message waiting), EPIPE (no message waiting and a rank of the job
 * was lost), EINVAL (a NULL argument), EPROTO.
 */
ssize_t SkifCh_Recv(struct SkifCh *ch,
                    struct iovec cont[SKIFCH_CONT_SIZE], int *cont_count);

/**
 * Completes the OLDEST message received on ch and not yet completed (one RecvComp per
 * Recv, first in first out): its memory may be reused by the library; do not read its
 * segments afterwards. Returns 0.
 * Errors: EINVAL (ch NULL, or no message outstanding).
 */
int SkifCh_RecvComp(struct SkifCh *ch);

/* ------------------------------------------------------------------------ the rest */

/**
 * Joins the job this process was started in by skifrun (environment SKIFCH_RANK,
 * SKIFCH_SIZE, SKIFCH_FD), or creates a 1-rank job when started alone. argc and argv are
 * neither read nor changed and may be NULL. Returns 0.
 * May be called again (by the application and by libraries built on SkifCh): calls are
 * counted, and the job is left by the Finalize that matches the first Init. A process
 * joins its job once: Init after that last Finalize fails with EINVAL.
 * Errors: EINVAL (bad launcher environment: the reason is printed on stderr; or Init after
 * the last Finalize), EPROTO (the job segment fails validation), other errno from the OS.
 */
int SkifCh_Init(int *argc, char ***argv);

/**
 * Matches one SkifCh_Init. The last one leaves the job: this rank is marked finalized,
 * and peers that send to it from then on get EHOSTUNREACH (messages it already sent
 * stay deliverable). All channels must be closed before the last Finalize; otherwise it
 * fails with EINVAL and changes nothing (close them and call it again).
 * A process that exits without Finalize counts as lost: its peers get EPIPE.
 * Errors: EINVAL (not initialised, or channels still open).
 */
int SkifCh_Finalize(void);

/** This process's rank in the job (0..size-1). Errors: EINVAL outside Init..Finalize. */
int SkifCh_Rank(void);

/** Number of ranks in the job (at most 1024). Errors: EINVAL outside Init..Finalize. */
int SkifCh_Size(void);

/**
 * Opens this process's channel on port (0..ports-1; the shm driver has 5 ports per rank
 * by default, skifrun --ports / SKIFCH_PORTS up to 64). Messages sent to a port before it
 * is opened wait for it (the sender sees back-pressure when they fill its lane).
 * Returns NULL on failure.
 * Errors: EINVAL (outside Init..Finalize, port negative or out of range, port already
 * open in this process).
 */
struct SkifCh *SkifCh_Open(int port);

/**
 * Closes a channel: completes every message still held on it (their segments become
 * invalid). Peers that send to the port afterwards get EHOSTUNREACH; the port may be
 * opened again. Returns 0. Like a closed file descriptor, the handle then fails every
 * call with EBADF (its memory is kept, not freed), until SkifCh_Open of the same port
 * returns the same handle again.
 * Errors: EINVAL (ch NULL), EBADF (already closed).
 */
int SkifCh_Close(struct SkifCh *ch);

/**
 * The address of port on rank. Needs no Init. Out-of-range values (outside 0..65535)
 * give SKIFCH_ADDR_INVALID with errno EINVAL; ranks/ports that the job lacks are
 * reported by SkifCh_Send (EHOSTUNREACH).
 */
netaddr_t SkifCh_Addr(int rank, int port);

/** The address of ch itself. SKIFCH_ADDR_INVALID with errno EINVAL if ch is NULL. */
netaddr_t SkifCh_MyAddr(const struct SkifCh *ch);

/**
 * As SkifCh_Recv, and stores the sender's channel address in *src (src may be NULL).
 */
ssize_t SkifCh_RecvFrom(struct SkifCh *ch, struct iovec cont[SKIFCH_CONT_SIZE],
                        int *cont_count, netaddr_t *src);

/**
 * Waits until a message is ready on ch (it is not received: call SkifCh_Recv), for at most
 * timeout_ms milliseconds (-1: forever; 0: just check). Waits by the channel's policy,
 * set by the environment SKIFCH_WAIT (skifrun --wait): spin, fixed[:<us>] (spin that
 * long, then sleep; the default, 20 us) or block.
 * Returns 0 when a message is ready.
 * Errors: ETIMEDOUT, EPIPE (no message and a rank of the job was lost; reported within a
 * second of the loss), EINVAL (ch NULL, timeout_ms < -1), EPROTO.
 */
int SkifCh_Wait(struct SkifCh *ch, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* SKIFCH_H */
