/*
 * t4a/gpu_loader.h -- libt4a_gpu: find, validate and open GPU backend plugins.
 *
 * Consumers link only this small library (or dlopen it, e.g. from Python
 * ctypes) and choose a backend at run time; no CUDA library is needed at link
 * time. A backend is a plugin exporting the v1 entry symbol declared in
 * <t4a/gpu_backend_v1.h>.
 *
 * Lookup. t4a_gpu_open(spec) takes:
 *   - a path (any spec containing '/'): that file, nothing else; a relative
 *     path the caller passes is its explicit choice and is resolved against
 *     the current directory at the call, as open(2) would;
 *   - a name ("cuda"): the file libt4a_<name>.so searched in the plugin
 *     directories (below);
 *   - NULL or "": the default backend: $T4A_GPU_BACKEND (a name or an
 *     absolute path) when set, else "cuda". A relative path there is refused
 *     (T4A_EINVAL): the file loaded would depend on the current directory
 *     of whatever program reads the environment.
 * Plugin directories, in order: $T4A_GPU_BACKEND_PATH (colon-separated; it
 * replaces the defaults) or else the configured plugin directory
 * ($(pkglibdir), see t4a_gpu_plugin_dir()). The current directory is never
 * searched implicitly: relative entries are ignored (logged at T4A_LOG=warn,
 * and named in the not-found message). Environment variables are ignored in setuid/setgid
 * processes. Values too long for the loader are refused, never shortened
 * (a shortened path can name another directory): a $T4A_GPU_BACKEND_PATH of
 * 4096 bytes or more, or with an entry too long to hold a plugin's file
 * name, makes lookups and listing fail with T4A_EINVAL, searching nothing.
 *
 * Validation. The loader resolves the entry symbol, calls it with this
 * header's ABI version, and refuses (T4A_EABI) a different major, a table
 * smaller than the required slots, or a NULL required slot (last_error,
 * init, get_info, device_count, device_info), naming the file and versions.
 * It does not call init(): the consumer does, and reads the reason from
 * last_error when it fails.
 *
 * Tables. t4a_gpu_backend_table() returns the loader's copy of the plugin's
 * table, normalised to this header's size: slots beyond the plugin's
 * struct_size read as NULL, so consumers need only test for NULL.
 *
 * Lifetime and threads. Every function is thread-safe. Opening the same
 * plugin twice (by name, path, link or environment) returns the same
 * backend with its reference count raised; each successful open needs one
 * t4a_gpu_close. The plugin is unloaded at the last close; tables and
 * strings obtained from it are invalid afterwards. Several different
 * backends can be open at once, and a backend can be closed and another
 * opened (swapped) while the process runs. The loader runs no plugin code
 * (constructors, entry point, destructors) while holding its lock, so that
 * code may itself call the loader, e.g. to open another backend. Two threads
 * opening the same plugin for the first time at once may both call its entry
 * point; one table is kept.
 *
 * Errors. Functions returning int return T4A_OK or a negative T4A_E*
 * status; t4a_gpu_last_error() then holds "<what failed>; <what to do>" for
 * the calling thread.
 */
#ifndef T4A_GPU_LOADER_H
#define T4A_GPU_LOADER_H

#include <t4a/gpu_backend_v1.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define T4A_LOADER_API __attribute__((visibility("default")))
#else
#define T4A_LOADER_API
#endif

/* An open backend (opaque, reference counted). */
typedef struct t4a_gpu_backend t4a_gpu_backend;

/* One installed backend, as listed by t4a_gpu_list. */
typedef struct t4a_gpu_backend_entry {
  char name[64];   /* "cuda" (from libt4a_cuda.so) */
  char path[4096]; /* absolute or as found in the search path */
} t4a_gpu_backend_entry;

/* Opens a backend by name, by path, or the default (NULL or ""). */
T4A_LOADER_API int t4a_gpu_open(const char *spec, t4a_gpu_backend **out);

/* Opens the plugin file at `path` (never searched). A relative path is
 * resolved against the current directory at the call, as open(2) would;
 * t4a_gpu_backend_path() then reports the resolved absolute file. A path of
 * 4096 bytes or more is refused (T4A_EINVAL). */
T4A_LOADER_API int t4a_gpu_open_path(const char *path, t4a_gpu_backend **out);

/* Drops one reference; unloads the plugin at the last one. */
T4A_LOADER_API int t4a_gpu_close(t4a_gpu_backend *backend);

/* The backend's normalised function table; NULL for a NULL backend. */
T4A_LOADER_API const t4a_gpu_backend_v1 *t4a_gpu_backend_table(const t4a_gpu_backend *backend);

/* The file the backend was loaded from (resolved, absolute). */
T4A_LOADER_API const char *t4a_gpu_backend_path(const t4a_gpu_backend *backend);

/* The plugin's ABI version as it reported it. */
T4A_LOADER_API int t4a_gpu_backend_abi(const t4a_gpu_backend *backend, uint16_t *major,
                                       uint16_t *minor);

/* Lists the plugins found in the plugin directories, sorted by name, each
 * name once (the first directory wins). Writes at most `capacity` entries;
 * *count receives the number found (may exceed capacity). Files are not
 * opened. */
T4A_LOADER_API int t4a_gpu_list(t4a_gpu_backend_entry *entries, size_t capacity, size_t *count);

/* The directories searched, colon-separated, as the current environment
 * makes them; "" when $T4A_GPU_BACKEND_PATH is refused as too long (see
 * Lookup). Static per thread; valid until the thread's next call. */
T4A_LOADER_API const char *t4a_gpu_search_path(void);

/* The configured plugin directory ($(pkglibdir) at build time). */
T4A_LOADER_API const char *t4a_gpu_plugin_dir(void);

/* Detail of the calling thread's last loader failure ("" when none). */
T4A_LOADER_API const char *t4a_gpu_last_error(void);

/* Status name and message (same list as <t4a/gpu_backend_v1.h>), exported
 * for consumers that cannot use the header's inline functions (ctypes). */
T4A_LOADER_API const char *t4a_gpu_status_name(int status);
T4A_LOADER_API const char *t4a_gpu_status_message(int status);

/* The loader's own version, and the backend ABI it speaks. */
T4A_LOADER_API void t4a_gpu_loader_version(int *major, int *minor, int *patch);
T4A_LOADER_API void t4a_gpu_loader_abi(int *major, int *minor);

#ifdef __cplusplus
}
#endif

#endif /* T4A_GPU_LOADER_H */
