// Linux process calls for the Kiln host that Swift's Glibc module doesn't expose or can't call
// (variadic syscall, _GNU_SOURCE-only functions). _GNU_SOURCE is defined only in the .c file.
#ifndef CKILN_HOST_H
#define CKILN_HOST_H

#include <sys/types.h>

/// Spawns `shell -e -c command` (`shell` an absolute path: /bin/sh or /bin/bash; `-e` as go-task
/// runs commands) in `directory`, in a new process group, with standard input from /dev/null and
/// standard output and error both going to `output_fd`. The child starts with an empty signal mask
/// and default dispositions for SIGINT, SIGTERM, SIGQUIT, SIGHUP and SIGPIPE. Returns 0 and sets
/// *pid, or an errno value.
int ckiln_spawn_shell(const char *shell, const char *command, const char *directory, char *const envp[], int output_fd,
                      pid_t *pid);

/// Starts one simple command without a shell, exactly as `/bin/sh -e -c` would start it (see
/// CommandShell.directWords): `words` (NULL-terminated; words[0] the command word as written) with
/// the program the shell would find for words[0] on envp's PATH (or words[0] itself when it holds
/// a '/'), and the environment the shell would pass on (variables with a valid name only, and PWD
/// as the shell sets it). Descriptors, process group and signals as ckiln_spawn_shell. Returns 0
/// and sets *pid; -1 when the shell must start it instead: it alone knows the answer (no such
/// program, a PATH entry it reads its own way, a script without `#!`, an environment with IFS, PPID
/// or OPTIND, which it sets its own way, or any other failure, which it then reports in its own
/// words).
int ckiln_spawn_direct(char *const words[], const char *directory, char *const envp[], int output_fd, pid_t *pid);

/// As ckiln_spawn_shell, but only standard output goes to `output_fd` (standard error is kiln's).
/// The child leads a process group of its own, as ckiln_spawn_shell's does: Ctrl-C at the terminal
/// reaches kiln, which passes it on (LoadInterruption), and the guardian can end the group with kiln.
int ckiln_spawn_shell_capturing(const char *shell, const char *command, const char *directory, char *const envp[],
                                int output_fd, pid_t *pid);

/// As ckiln_spawn_shell, for go-task's `interactive: true`: the child keeps kiln's standard input,
/// output and error. With `terminal_fd` >= 0 (a terminal whose foreground process group is kiln's),
/// the child's new process group becomes its foreground group, so the command reads the terminal
/// and Ctrl-C reaches the command, as in a shell; ckiln_take_terminal gives it back.
int ckiln_spawn_shell_interactive(const char *shell, const char *command, const char *directory, char *const envp[],
                                  int terminal_fd, pid_t *pid);

/// 0 when standard input is a terminal whose foreground process group is kiln's, else -1.
int ckiln_owned_terminal(void);

/// Makes kiln's process group the foreground group of `terminal_fd` again; 0 or -1 and errno.
int ckiln_take_terminal(int terminal_fd);

/// pidfd_open(2): a file descriptor that becomes readable when the process exits; -1 and errno on failure.
int ckiln_pidfd_open(pid_t pid);

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and the threads it creates later) and
/// returns a signalfd that reads them, or -1.
int ckiln_block_termination_signals(void);

/// Reads one pending signal from a signalfd made by ckiln_block_termination_signals; returns its
/// number, or 0 if none.
int ckiln_read_signal(int signal_fd);

/// pipe2(fds, O_CLOEXEC).
int ckiln_pipe_cloexec(int fds[2]);

/// epoll_create1(EPOLL_CLOEXEC).
int ckiln_epoll_create(void);

/// Watches `fd` for input (and hang-up) with `token` as its user data; 0 or -1 and errno.
int ckiln_epoll_add(int epoll_fd, int fd, unsigned long long token);

/// Stops watching `fd`.
int ckiln_epoll_remove(int epoll_fd, int fd);

/// Waits for events and stores up to `capacity` tokens; returns their count, 0 on timeout, -1 on error.
int ckiln_epoll_wait(int epoll_fd, unsigned long long *tokens, int capacity, int timeout_ms);

/// Tells this process's guardian that the process group `group` started (`started` = 1) or is
/// done (0). The guardian — forked on the first call, in a session of its own, holding the read
/// end of a close-on-exec pipe — kills every group still listed with SIGKILL when that pipe
/// closes: when this process exits or is killed, even by SIGKILL. So no command kiln started,
/// nor anything that command started in its group, outlives kiln. 0, or -1 when there is no
/// guardian (it couldn't be forked).
int ckiln_guardian_note(pid_t group, int started);

/// Forks the guardian now, if it isn't running yet; 0, or -1 when it couldn't be forked.
/// Forking copies the page tables and makes every page of this process copy-on-write, so each
/// page it writes afterwards costs a page fault and a copy: fork it while the heap is still
/// small, before a run builds its plan (a 10k-task plan is ~11k pages).
int ckiln_guardian_start(void);

/// Marks a run as in progress (1) or over (0). While one is, a call to exit() — from a plugin,
/// say — doesn't end kiln with the status it asks for: kiln says the build is unfinished and
/// exits with 70, so a build cut short is never reported as a success.
void ckiln_set_run_in_progress(int running);

/// Starts `path` with `argv` and `envp` in a mount namespace of its own in which each file
/// `targets[i]` shows the content of `sources[i]` (a bind mount); the files on disk, and what
/// every other process sees, are unchanged, and the view ends with the last process in it. Not
/// root: in a user namespace of its own too, mapping only the caller's user and group. SIGINT and
/// SIGQUIT are set to their defaults in the child. 0 with `*pid` set; otherwise an errno, with
/// `*failed_step` saying what failed: 1 unshare, 2 the id maps, 3 making mounts private, 4 a
/// bind mount (`*failed_index` says which), 5 exec.
int ckiln_spawn_with_view(const char *path, char *const argv[], char *const envp[], const char *const sources[],
                          const char *const targets[], int count, pid_t *pid, int *failed_step, int *failed_index);

#endif
