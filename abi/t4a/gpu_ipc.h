/*
 * t4a/gpu_ipc.h -- passing what buffer_export_ipc and witness_export_ipc
 * make to another process over a Unix-domain socket (ABI 1.2's processes,
 * see t4a/gpu_backend_v1.h).
 *
 * An exported buffer or witness is plain bytes: any channel carries them.
 * The pool's file descriptor (buffer_export_ipc's pool_fd), which the
 * importer needs once per exporting runtime, is not a number the other
 * process can use: it must travel as SCM_RIGHTS ancillary data on a Unix
 * socket (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) between a parent and the
 * child it spawns, or a named socket), which gives the receiver a new
 * descriptor of the same file. These two functions do that, with a message
 * of bytes alongside; they are static inline (POSIX only, no library to
 * link) and retry on EINTR.
 *
 *   // exporter                                  // importer
 *   t4a_ipc_buffer b; int fd;                    t4a_ipc_buffer b; int fd;
 *   t->buffer_export_ipc(rt, buf, &b, &fd);      t4a_ipc_recv(sock, &b, sizeof b, &fd);
 *   t4a_ipc_send(sock, &b, sizeof b, fd);        t->buffer_import_ipc(rt2, &b, fd, &mine);
 *   close(fd);                                   close(fd); // rt2 keeps the pool
 *
 * Python has the same in its standard library: socket.send_fds and
 * socket.recv_fds (3.9 and later).
 */
#ifndef T4A_GPU_IPC_H
#define T4A_GPU_IPC_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sends n bytes of data and, when fd >= 0, the descriptor fd (SCM_RIGHTS)
 * on the Unix socket sock. 0 on success, -1 with errno on failure (a short
 * send is a failure: EMSGSIZE). The caller keeps fd (close it after). */
static inline int t4a_ipc_send(int sock, const void *data, size_t n, int fd) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct iovec iov;
  struct msghdr msg;
  memset(&u, 0, sizeof u);
  memset(&msg, 0, sizeof msg);
  iov.iov_base = (void *)(uintptr_t)data; /* sendmsg reads it only */
  iov.iov_len = n;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t k;
  do
    k = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (k < 0 && errno == EINTR);
  if (k < 0)
    return -1;
  if ((size_t)k != n) {
    errno = EMSGSIZE;
    return -1;
  }
  return 0;
}

/* Receives exactly n bytes into data and, when the sender attached one, a
 * descriptor into *fd (close-on-exec; -1 when none came; fd may be NULL to
 * refuse one: a descriptor that arrives anyway is closed). 0 on success, -1
 * with errno on failure (ECONNRESET: the other end closed first). */
static inline int t4a_ipc_recv(int sock, void *data, size_t n, int *fd) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  size_t got = 0;
  if (fd)
    *fd = -1;
  while (got < n) {
    struct iovec iov;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    iov.iov_base = (char *)data + got;
    iov.iov_len = n - got;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    ssize_t k = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      if (k == 0)
        errno = ECONNRESET;
      return -1;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
          c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        int got_fd;
        memcpy(&got_fd, CMSG_DATA(c), sizeof got_fd);
        if (fd && *fd < 0)
          *fd = got_fd;
        else
          (void)close(got_fd);
      }
    got += (size_t)k;
  }
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* T4A_GPU_IPC_H */
