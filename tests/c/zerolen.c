/*
 * Zero-length messages are messages: each rank sends to the next rank of the ring (itself
 * in a 1-rank job) a sequence mixing empty messages, given three ways (iov_count 0 with a
 * NULL iov; one empty part; a NULL-based empty part plus an empty part), and 1..3-byte
 * messages. The receiver must see exactly that sequence: empty ones return 0 with
 * cont_count 0, none is dropped or merged.
 */
#include "testutil.h"

#define K 300

/* Length of message i: 0 for two of every three. */
static size_t len_of(int i) { return i % 3 == 2 ? (size_t)(1 + i % 4 % 3) : 0; }

int main(int argc, char **argv) {
    t_init(&argc, &argv);
    int size = SkifCh_Size();
    struct SkifCh *ch = t_open(0);
    netaddr_t dst = SkifCh_Addr((t_rank + 1) % size, 0);
    netaddr_t from = SkifCh_Addr((t_rank + size - 1) % size, 0);
    int sent = 0, got = 0;

    while (sent < K || got < K) {
        if (sent < K) {
            unsigned char b[3] = {(unsigned char)sent, (unsigned char)(sent >> 8), 0x5a};
            ssize_t n;
            size_t len = len_of(sent);
            if (len > 0) {
                struct iovec iov[2] = {{NULL, 0}, {b, len}};
                n = SkifCh_Send(ch, dst, iov, 2);
            } else if (sent % 3 == 0) {
                n = SkifCh_Send(ch, dst, NULL, 0);
            } else {
                struct iovec iov[2] = {{NULL, 0}, {b, 0}};
                n = SkifCh_Send(ch, dst, iov, 2);
            }
            if (n < 0) {
                CHECK(errno == EAGAIN, "Send %d: errno %d (%s)", sent, errno, strerror(errno));
            } else {
                CHECK((size_t)n == len, "Send %d returned %zd, want %zu", sent, n, len);
                sent++;
            }
        }
        struct iovec cont[SKIFCH_CONT_SIZE];
        int cnt = -1;
        netaddr_t src = 0;
        ssize_t n = SkifCh_RecvFrom(ch, cont, &cnt, &src);
        if (n < 0) {
            CHECK(errno == EAGAIN, "RecvFrom: errno %d (%s)", errno, strerror(errno));
            continue;
        }
        CHECK(got < K, "message %d: more messages than sent", got);
        CHECK(src == from, "message %d from %#x", got, (unsigned)src);
        size_t want = len_of(got);
        CHECK((size_t)n == want, "message %d has %zd bytes, want %zu", got, n, want);
        if (want == 0) {
            CHECK(cnt == 0, "empty message %d: cont_count %d", got, cnt);
        } else {
            CHECK(cnt == 1 || cnt == 2, "message %d: cont_count %d", got, cnt);
            unsigned char b[3];
            size_t off = 0;
            for (int i = 0; i < cnt; i++) {
                CHECK(cont[i].iov_len > 0 && off + cont[i].iov_len <= want, "segment %d", i);
                memcpy(b + off, cont[i].iov_base, cont[i].iov_len);
                off += cont[i].iov_len;
            }
            unsigned char exp[3] = {(unsigned char)got, (unsigned char)(got >> 8), 0x5a};
            CHECK(memcmp(b, exp, want) == 0, "message %d: wrong bytes", got);
        }
        CHECK_OK(SkifCh_RecvComp(ch));
        got++;
    }
    struct iovec cont[SKIFCH_CONT_SIZE];
    int cnt;
    CHECK(SkifCh_Wait(ch, 50) == -1 && errno == ETIMEDOUT, "an extra message arrived");
    CHECK_ERR(SkifCh_Recv(ch, cont, &cnt), EAGAIN);
    if (t_rank == 0) printf("zerolen: %d messages, %d of them empty\n", K, 2 * K / 3);
    t_finish(&ch, 1);
    return 0;
}
