#define _GNU_SOURCE
#include "CKilnHost.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Starts `program` with `argv`. The child leads a process group of its own, so kiln can signal
/// everything it starts. `output_fd` -1: the child keeps kiln's standard input, output and error
/// (an interactive command); `terminal_fd` >= 0: its new process group becomes that terminal's
/// foreground group.
static int spawn_program(const char *program, char *const argv[], const char *directory, char *const envp[],
                         int output_fd, int error_fd, int terminal_fd, pid_t *pid) {
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
    // An interactive command gets the terminal's job-control signals' defaults too (kiln's may be
    // inherited from a shell that ignores them).
    if (output_fd < 0) {
        sigaddset(&defaults, SIGTSTP);
        sigaddset(&defaults, SIGTTIN);
        sigaddset(&defaults, SIGTTOU);
    }
    if ((output_fd < 0 || (status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0) &&
        (output_fd < 0 || (status = posix_spawn_file_actions_adddup2(&actions, output_fd, 1)) == 0) &&
        (terminal_fd < 0 || (status = posix_spawn_file_actions_addtcsetpgrp_np(&actions, terminal_fd)) == 0) &&
        (error_fd < 0 || (status = posix_spawn_file_actions_adddup2(&actions, error_fd, 2)) == 0) &&
        (status = posix_spawn_file_actions_addchdir_np(&actions, directory)) == 0 &&
        (status = posix_spawnattr_setpgroup(&attributes, 0)) == 0 &&
        (status = posix_spawnattr_setsigmask(&attributes, &empty)) == 0 &&
        (status = posix_spawnattr_setsigdefault(&attributes, &defaults)) == 0 &&
        (status = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_USEVFORK)) == 0) {
        status = posix_spawn(pid, program, &actions, &attributes, argv, envp);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return status;
}

static int spawn_shell(const char *shell, const char *command, const char *directory, char *const envp[], int output_fd,
                       int error_fd, int terminal_fd, pid_t *pid) {
    // `-e`: a failing statement ends the command, as go-task runs every command (errexit).
    char *const argv[] = {(char *)shell, "-e", "-c", (char *)command, NULL};
    return spawn_program(shell, argv, directory, envp, output_fd, error_fd, terminal_fd, pid);
}

/// Whether `entry` ("NAME=value") has a name the shell keeps: [A-Za-z_][A-Za-z0-9_]*.
static int is_shell_variable(const char *entry) {
    const char *c = entry;
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || *c == '_')) return 0;
    for (c++; *c != '='; c++) {
        // The terminating NUL of an entry without `=` fails this test too.
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) return 0;
    }
    return 1;
}

/// The program `/bin/sh` runs for the command word `name`: the first regular, executable
/// `entry/name` along `path` (dash tries each entry in turn and skips what it can't run). Into
/// `found` (PATH_MAX bytes); 0, or -1 when the shell must decide: nothing found, or a `path` entry
/// that is empty, relative or holds dash's `%` (all three mean something only the shell knows).
static int find_program(const char *name, const char *path, char *found) {
    size_t name_length = strlen(name);
    while (1) {
        const char *end = strchrnul(path, ':');
        size_t length = (size_t)(end - path);
        if (length == 0 || path[0] != '/' || memchr(path, '%', length) != NULL) return -1;
        if (length + 1 + name_length < PATH_MAX) {
            memcpy(found, path, length);
            found[length] = '/';
            memcpy(found + length + 1, name, name_length + 1);
            struct stat info;
            if (stat(found, &info) == 0 && S_ISREG(info.st_mode) && access(found, X_OK) == 0) return 0;
        }
        if (*end == 0) return -1;
        path = end + 1;
    }
}

int ckiln_spawn_direct(char *const words[], const char *directory, char *const envp[], int output_fd, pid_t *pid) {
    size_t count = 0;
    const char *path = NULL, *pwd = NULL;
    for (; envp[count] != NULL; count++) {
        if (strncmp(envp[count], "PATH=", 5) == 0) path = envp[count] + 5;
        if (strncmp(envp[count], "PWD=", 4) == 0) pwd = envp[count] + 4;
        // Variables dash sets its own way when they are in its environment (IFS to its default,
        // PPID to its parent, OPTIND to 1 or an error): the shell's to pass on.
        if (strncmp(envp[count], "IFS=", 4) == 0 || strncmp(envp[count], "PPID=", 5) == 0 ||
            strncmp(envp[count], "OPTIND=", 7) == 0)
            return -1;
    }
    char program[PATH_MAX];
    if (strchr(words[0], '/') != NULL) {
        // Run as written (relative to `directory`), as the shell does: no search.
        if (strlen(words[0]) >= PATH_MAX) return -1;
        strcpy(program, words[0]);
    } else if (path == NULL || find_program(words[0], path, program) != 0) {
        return -1;
    }
    // The environment the shell passes on: every variable whose name it can hold, and PWD — the
    // one it was given if that names `directory` (the same file), else the directory's real path.
    char pwd_entry[PATH_MAX + 4];
    struct stat here, there;
    int keeps_pwd = pwd != NULL && pwd[0] == '/' && stat(directory, &here) == 0 && stat(pwd, &there) == 0 &&
                    here.st_dev == there.st_dev && here.st_ino == there.st_ino;
    if (!keeps_pwd) {
        char real[PATH_MAX];
        if (realpath(directory, real) == NULL) return -1;
        memcpy(pwd_entry, "PWD=", 4);
        strcpy(pwd_entry + 4, real);
    }
    char **environment = malloc((count + 2) * sizeof(char *));
    if (environment == NULL) return -1;
    size_t kept = 0;
    for (size_t index = 0; index < count; index++) {
        if (!is_shell_variable(envp[index])) continue;
        if (!keeps_pwd && strncmp(envp[index], "PWD=", 4) == 0) continue;
        environment[kept++] = envp[index];
    }
    if (!keeps_pwd) environment[kept++] = pwd_entry;
    environment[kept] = NULL;
    int status = spawn_program(program, words, directory, environment, output_fd, output_fd, -1, pid);
    free(environment);
    // Whatever stopped it here (no such program after all, a script without `#!`, …), the shell
    // starts it as it would have, or says why not, in its own words.
    return status == 0 ? 0 : -1;
}

int ckiln_spawn_shell(const char *shell, const char *command, const char *directory, char *const envp[], int output_fd,
                      pid_t *pid) {
    return spawn_shell(shell, command, directory, envp, output_fd, output_fd, -1, pid);
}

int ckiln_spawn_shell_interactive(const char *shell, const char *command, const char *directory, char *const envp[],
                                  int terminal_fd, pid_t *pid) {
    return spawn_shell(shell, command, directory, envp, -1, -1, terminal_fd, pid);
}

int ckiln_owned_terminal(void) {
    if (!isatty(0)) return -1;
    pid_t foreground = tcgetpgrp(0);
    return foreground >= 0 && foreground == getpgrp() ? 0 : -1;
}

int ckiln_take_terminal(int terminal_fd) {
    // kiln is in the background now: SIGTTOU, blocked here, would otherwise stop it.
    sigset_t block, previous;
    sigemptyset(&block);
    sigaddset(&block, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &block, &previous);
    int status = tcsetpgrp(terminal_fd, getpgrp());
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return status;
}

int ckiln_spawn_shell_capturing(const char *shell, const char *command, const char *directory, char *const envp[],
                                int output_fd, pid_t *pid) {
    return spawn_shell(shell, command, directory, envp, output_fd, -1, -1, pid);
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

// MARK: The guardian

#include <pthread.h>

/// The process groups the guardian kills when kiln is gone. A static array: the guardian is a
/// forked copy of a multithreaded process and may call only async-signal-safe functions, so no
/// malloc.
#define CKILN_GUARDIAN_CAPACITY 4096
static pid_t guardian_groups[CKILN_GUARDIAN_CAPACITY];

static int guardian_fd = -1;
static pthread_once_t guardian_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t guardian_lock = PTHREAD_MUTEX_INITIALIZER;

static void guardian_serve(int in) __attribute__((noreturn));
static void guardian_serve(int in) {
    // From here on only async-signal-safe calls: the parent has other threads.
    struct sigaction ignore;
    for (unsigned i = 0; i < sizeof ignore; i++) ((char *)&ignore)[i] = 0;
    ignore.sa_handler = SIG_IGN;
    int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
    for (unsigned i = 0; i < sizeof ignored / sizeof ignored[0]; i++) sigaction(ignored[i], &ignore, NULL);
    // Its own session: not stopped by the terminal's Ctrl-C or Ctrl-Z, nor by a kill of kiln's group.
    setsid();
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    // Hold nothing of kiln's (its lock, its output pipes) but the pipe it reads.
    if (in > 3) syscall(SYS_close_range, 3, in - 1, 0);
    syscall(SYS_close_range, in + 1, ~0U, 0);
    int count = 0;
    for (;;) {
        int message[2];
        ssize_t got = read(in, message, sizeof message);
        if (got < 0 && errno == EINTR) continue;
        if (got != (ssize_t)sizeof message) break;  // end of file: every copy of the write end is closed
        if (message[0] == 1) {
            if (count < CKILN_GUARDIAN_CAPACITY) guardian_groups[count++] = (pid_t)message[1];
        } else {
            for (int i = 0; i < count; i++) {
                if (guardian_groups[i] == (pid_t)message[1]) {
                    guardian_groups[i] = guardian_groups[--count];
                    break;
                }
            }
        }
    }
    for (int i = 0; i < count; i++) kill(-guardian_groups[i], SIGKILL);
    _exit(0);
}

static void guardian_start(void) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[1]);
        guardian_serve(fds[0]);
    }
    close(fds[0]);
    guardian_fd = fds[1];
}

int ckiln_guardian_start(void) {
    pthread_once(&guardian_once, guardian_start);
    return guardian_fd < 0 ? -1 : 0;
}

int ckiln_guardian_note(pid_t group, int started) {
    pthread_once(&guardian_once, guardian_start);
    if (guardian_fd < 0) return -1;
    int message[2] = {started ? 1 : 0, (int)group};
    pthread_mutex_lock(&guardian_lock);
    ssize_t written;
    do {
        written = write(guardian_fd, message, sizeof message);
    } while (written < 0 && errno == EINTR);
    pthread_mutex_unlock(&guardian_lock);
    return written == (ssize_t)sizeof message ? 0 : -1;
}

// MARK: The exit guard

#include <stdlib.h>

static volatile sig_atomic_t run_in_progress = 0;
static pthread_once_t exit_guard_once = PTHREAD_ONCE_INIT;

static void exit_guard(void) {
    if (!run_in_progress) return;
    static const char message[] =
        "kiln: exit() was called in the middle of the run (by a plugin, or code a plugin runs): the build is unfinished; "
        "exiting with status 70, not the status it asked for\n";
    ssize_t ignored = write(2, message, sizeof message - 1);
    (void)ignored;
    _exit(70);
}

static void exit_guard_install(void) { atexit(exit_guard); }

void ckiln_set_run_in_progress(int running) {
    pthread_once(&exit_guard_once, exit_guard_install);
    run_in_progress = running ? 1 : 0;
}

// MARK: A private view of the working tree

#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/wait.h>

/// Writes `text` to `path` whole, with only system calls (the caller is a forked child).
static int write_whole(const char *path, const char *text, size_t length) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t written;
    do {
        written = write(fd, text, length);
    } while (written < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == (ssize_t)length ? 0 : -1;
}

int ckiln_spawn_with_view(const char *path, char *const argv[], char *const envp[], const char *const sources[],
                          const char *const targets[], int count, pid_t *pid, int *failed_step, int *failed_index) {
    // Everything the child needs is made before fork: after it, only system calls.
    uid_t uid = geteuid();
    gid_t gid = getegid();
    int private_user = uid != 0;
    char uid_map[64], gid_map[64];
    int uid_length = snprintf(uid_map, sizeof uid_map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    int gid_length = snprintf(gid_map, sizeof gid_map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    int report_fds[2];
    if (pipe2(report_fds, O_CLOEXEC) != 0) return errno;
    pid_t child = fork();
    if (child < 0) {
        int saved = errno;
        close(report_fds[0]);
        close(report_fds[1]);
        return saved;
    }
    if (child == 0) {
        int report[3] = {0, 0, -1};
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        if (unshare(CLONE_NEWNS | (private_user ? CLONE_NEWUSER : 0)) != 0) {
            report[0] = 1;
            goto failed;
        }
        if (private_user && (write_whole("/proc/self/setgroups", "deny", 4) != 0 ||
                             write_whole("/proc/self/uid_map", uid_map, (size_t)uid_length) != 0 ||
                             write_whole("/proc/self/gid_map", gid_map, (size_t)gid_length) != 0)) {
            report[0] = 2;
            goto failed;
        }
        // Nothing mounted here propagates back to the system's namespace.
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
            report[0] = 3;
            goto failed;
        }
        for (int i = 0; i < count; i++) {
            if (mount(sources[i], targets[i], NULL, MS_BIND, NULL) != 0) {
                report[0] = 4;
                report[2] = i;
                goto failed;
            }
        }
        execve(path, argv, envp);
        report[0] = 5;
    failed:
        report[1] = errno;
        ssize_t ignored = write(report_fds[1], report, sizeof report);
        (void)ignored;
        _exit(127);
    }
    close(report_fds[1]);
    int report[3];
    ssize_t got;
    do {
        got = read(report_fds[0], report, sizeof report);
    } while (got < 0 && errno == EINTR);
    close(report_fds[0]);
    if (got == (ssize_t)sizeof report) {
        // The child failed before exec (its end closed at exec otherwise): reap it.
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
        *failed_step = report[0];
        *failed_index = report[2];
        return report[1] != 0 ? report[1] : EINVAL;
    }
    *pid = child;
    return 0;
}
