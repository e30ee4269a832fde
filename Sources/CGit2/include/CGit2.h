#ifndef CGIT2_H
#define CGIT2_H
// libgit2 for `kiln affected`, `run --affected`, `status` and the hooks' slow paths. Only its
// types and constants come from <git2.h> (Debian: libgit2-dev 1.5): the library itself, with its
// dependencies (libssh2 and OpenSSL's libcrypto, mbed TLS, Kerberos, PCRE2…), is opened with
// dlopen on first use, so a run that never asks git for changes doesn't map it. Every libgit2 call
// goes through a `kiln_` wrapper below, declared from one list (KILN_GIT2_FUNCTIONS); a test checks
// that libKilnCLI.so neither needs libgit2 nor calls it directly.
#include <git2.h>
#include <stddef.h>

/// Opens libgit2 and resolves every function in the list, once per process (any thread; the
/// first caller does it, the others wait). 0 on success, or -1 with a message in `error`.
int kiln_git2_load(char *error, size_t size);

// X(result, name, parameters, arguments): one libgit2 function kiln calls.
#define KILN_GIT2_FUNCTIONS(X)                                                                                        \
    X(int, git_libgit2_init, (void), ())                                                                              \
    X(const git_error *, git_error_last, (void), ())                                                                  \
    X(int, git_repository_open_ext, (git_repository **out, const char *path, unsigned int flags, const char *ceiling), \
      (out, path, flags, ceiling))                                                                                    \
    X(void, git_repository_free, (git_repository *repo), (repo))                                                     \
    X(const char *, git_repository_workdir, (const git_repository *repo), (repo))                                    \
    X(const char *, git_repository_path, (const git_repository *repo), (repo))                                       \
    X(const char *, git_repository_commondir, (const git_repository *repo), (repo))                                  \
    X(int, git_repository_head_unborn, (git_repository *repo), (repo))                                               \
    X(int, git_repository_config_snapshot, (git_config **out, git_repository *repo), (out, repo))                   \
    X(void, git_config_free, (git_config *config), (config))                                                         \
    X(int, git_config_get_string, (const char **out, const git_config *config, const char *name),                    \
      (out, config, name))                                                                                            \
    X(int, git_branch_iterator_new, (git_branch_iterator **out, git_repository *repo, git_branch_t flags),           \
      (out, repo, flags))                                                                                             \
    X(int, git_branch_next, (git_reference **out, git_branch_t *type, git_branch_iterator *iterator),                \
      (out, type, iterator))                                                                                          \
    X(void, git_branch_iterator_free, (git_branch_iterator *iterator), (iterator))                                   \
    X(const char *, git_reference_name, (const git_reference *reference), (reference))                               \
    X(void, git_reference_free, (git_reference *reference), (reference))                                             \
    X(int, git_revparse_single, (git_object **out, git_repository *repo, const char *spec), (out, repo, spec))       \
    X(int, git_object_peel, (git_object **out, const git_object *object, git_object_t type), (out, object, type))    \
    X(const git_oid *, git_object_id, (const git_object *object), (object))                                          \
    X(void, git_object_free, (git_object *object), (object))                                                         \
    X(int, git_merge_base, (git_oid *out, git_repository *repo, const git_oid *one, const git_oid *two),             \
      (out, repo, one, two))                                                                                          \
    X(int, git_commit_lookup, (git_commit **out, git_repository *repo, const git_oid *id), (out, repo, id))          \
    X(int, git_commit_tree, (git_tree **out, const git_commit *commit), (out, commit))                               \
    X(void, git_commit_free, (git_commit *commit), (commit))                                                         \
    X(int, git_tree_lookup, (git_tree **out, git_repository *repo, const git_oid *id), (out, repo, id))              \
    X(size_t, git_tree_entrycount, (const git_tree *tree), (tree))                                                   \
    X(const git_tree_entry *, git_tree_entry_byindex, (const git_tree *tree, size_t index), (tree, index))           \
    X(const char *, git_tree_entry_name, (const git_tree_entry *entry), (entry))                                     \
    X(const git_oid *, git_tree_entry_id, (const git_tree_entry *entry), (entry))                                    \
    X(git_filemode_t, git_tree_entry_filemode, (const git_tree_entry *entry), (entry))                               \
    X(void, git_tree_free, (git_tree *tree), (tree))                                                                 \
    X(int, git_diff_tree_to_tree,                                                                                     \
      (git_diff **out, git_repository *repo, git_tree *old_tree, git_tree *new_tree, const git_diff_options *options), \
      (out, repo, old_tree, new_tree, options))                                                                      \
    X(int, git_diff_find_options_init, (git_diff_find_options *options, unsigned int version), (options, version))   \
    X(int, git_diff_find_similar, (git_diff *diff, const git_diff_find_options *options), (diff, options))           \
    X(size_t, git_diff_num_deltas, (const git_diff *diff), (diff))                                                   \
    X(const git_diff_delta *, git_diff_get_delta, (const git_diff *diff, size_t index), (diff, index))               \
    X(void, git_diff_free, (git_diff *diff), (diff))                                                                 \
    X(int, git_status_options_init, (git_status_options *options, unsigned int version), (options, version))         \
    X(int, git_status_list_new, (git_status_list **out, git_repository *repo, const git_status_options *options),    \
      (out, repo, options))                                                                                           \
    X(size_t, git_status_list_entrycount, (git_status_list *list), (list))                                           \
    X(const git_status_entry *, git_status_byindex, (git_status_list *list, size_t index), (list, index))            \
    X(void, git_status_list_free, (git_status_list *list), (list))                                                   \
    X(int, git_ignore_path_is_ignored, (int *ignored, git_repository *repo, const char *path), (ignored, repo, path))

// kiln_git_libgit2_init, kiln_git_repository_open_ext…: the same signatures as libgit2's. Call
// kiln_git2_load first; a wrapper called before it succeeded aborts with a message.
#define KILN_GIT2_DECLARE(result, name, parameters, arguments) result kiln_##name parameters;
KILN_GIT2_FUNCTIONS(KILN_GIT2_DECLARE)
#undef KILN_GIT2_DECLARE

#endif
