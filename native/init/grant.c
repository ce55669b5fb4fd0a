/* grant.c - the init's side of a network grant (a3s.h, "Network grants").
 *
 * Only the init makes the proxy's socket, never the command: it binds a
 * TCP socket to 127.0.0.1:PORT in the sandbox's network namespace (bind is
 * allowed by the seccomp filter the init runs under; listen is not, for the
 * init as for the command) and passes it to the caller through the grant
 * socket, whose end inside the sandbox only the init holds, close-on-exec.
 * The caller listens on it, outside the filter, and says so with one byte;
 * only then does the command start, so its first connection finds the proxy
 * listening. When the command ends the init shuts the socket down: a
 * listening socket that is shut down for reading stops listening and drops
 * whatever waits in its queue, in every process that holds it, so the grant
 * ends with the command whatever the caller does with its copy.
 */
#define _GNU_SOURCE
#include "init.h"
#include "../src/session_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define GRANT_ACK_TIMEOUT_MS 10000 /* for the caller to listen */

_Static_assert(A3S_MSG_HEADER + 2 == A3S_GRANT_MESSAGE_SIZE, "the grant message of a3s.h");
_Static_assert(A3S_MSG_GRANT < 256 && A3S_MSG_VERSION < 256, "one-byte type and version");

static int fail(char *why, size_t cap, const char *step, int e) {
    snprintf(why, cap, "network grant: %s: %s", step, strerror(e));
    return -1;
}

int grant_open(int grant_fd, uint16_t port, char *why, size_t cap) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return fail(why, cap, "socket", errno);
    int one = 1;
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    /* SO_REUSEADDR: the previous command's proxy socket may linger, shut down, in the caller */
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(s, (struct sockaddr *)&at, sizeof at) < 0) {
        int e = errno;
        close(s);
        return fail(why, cap, "bind 127.0.0.1", e);
    }
    /* the header of session_msg.h ("A3SM", type, version, total length; little-endian),
     * then the port: A3S_GRANT_MESSAGE_SIZE bytes */
    uint8_t msg[A3S_MSG_HEADER + 2] = {'A', '3', 'S', 'M', A3S_MSG_GRANT, 0, A3S_MSG_VERSION, 0,
                                       A3S_MSG_HEADER + 2, 0, 0, 0, (uint8_t)(port & 0xff),
                                       (uint8_t)(port >> 8)};
    int sent = a3s_msg_send(grant_fd, msg, sizeof msg, &s, 1, GRANT_ACK_TIMEOUT_MS);
    if (sent < 0) {
        close(s);
        return fail(why, cap, "handing the proxy socket to the host", -sent);
    }
    struct pollfd p = {.fd = grant_fd, .events = POLLIN};
    int n;
    do
        n = poll(&p, 1, GRANT_ACK_TIMEOUT_MS);
    while (n < 0 && errno == EINTR);
    char ack = 0;
    ssize_t got = n > 0 ? recv(grant_fd, &ack, 1, 0) : -1;
    if (got != 1 || ack != 'L') {
        shutdown(s, SHUT_RDWR);
        close(s);
        snprintf(why, cap, "network grant: %s",
                 n == 0    ? "the host's mediator did not take the proxy socket in time"
                 : got == 0 ? "the host's mediator refused the grant"
                            : "the host's mediator answered something unexpected");
        return -1;
    }
    return s;
}

void grant_close(int *listener) {
    if (*listener < 0)
        return;
    shutdown(*listener, SHUT_RDWR); /* stops listening, in the host's copy as well */
    close(*listener);
    *listener = -1;
}
