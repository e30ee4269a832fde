#define _GNU_SOURCE
#include "CKilnHost.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

int ckiln_spawn_shell(const char *command, const char *directory, char *const envp[], int output_fd, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) return status;
    status = posix_spawnattr_init(&attributes);
    if (status != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return status;
    }
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGQUIT);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    if ((status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
        (status = posix_spawn_file_actions_adddup2(&actions, output_fd, 1)) == 0 &&
        (status = posix_spawn_file_actions_adddup2(&actions, output_fd, 2)) == 0 &&
        (status = posix_spawn_file_actions_addchdir_np(&actions, directory)) == 0 &&
        (status = posix_spawnattr_setpgroup(&attributes, 0)) == 0 &&
        (status = posix_spawnattr_setsigmask(&attributes, &empty)) == 0 &&
        (status = posix_spawnattr_setsigdefault(&attributes, &defaults)) == 0 &&
        (status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_USEVFORK)) == 0) {
        char *const argv[] = {"/bin/sh", "-c", (char *)command, NULL};
        status = posix_spawn(pid, "/bin/sh", &actions, &attributes, argv, envp);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return status;
}

int ckiln_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int ckiln_block_termination_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int ckiln_read_signal(int signal_fd) {
    struct signalfd_siginfo info;
    ssize_t count = read(signal_fd, &info, sizeof(info));
    if (count != (ssize_t)sizeof(info)) return 0;
    return (int)info.ssi_signo;
}

int ckiln_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int ckiln_epoll_add(int epoll_fd, int fd, unsigned long long token) {
    struct epoll_event event = {.events = EPOLLIN | EPOLLHUP | EPOLLERR, .data.u64 = token};
    return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
}

int ckiln_epoll_remove(int epoll_fd, int fd) { return epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL); }

int ckiln_epoll_wait(int epoll_fd, unsigned long long *tokens, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count;
    do {
        count = epoll_wait(epoll_fd, events, capacity, timeout_ms);
    } while (count < 0 && errno == EINTR);
    for (int i = 0; i < count; i++) tokens[i] = events[i].data.u64;
    return count;
}

int ckiln_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
