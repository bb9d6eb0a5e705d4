/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's pod directories and volumes (volume_manager.h): upstream
 * makePodDataDirs and cleanupOrphanedPodDirs (kubelet_pods.go), the volume
 * manager's WaitForAttachAndMount, the hostPath plugin's type checks
 * (pkg/volume/hostpath checkType) and the emptyDir plugin (pkg/volume/emptydir
 * SetUpAt, TearDownAt, calculateEmptyDirMemorySize). Issue 14.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "core/log.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "volume_manager.h"

#define POD_DIR_MODE 0750
#define HOST_PATH_DIR_MODE 0755
#define HOST_PATH_FILE_MODE 0644
#define EMPTY_DIR_MODE 0777
/* upstream volume_linux.go: rwMask | execMask for a directory */
#define FS_GROUP_DIR_MASK 0770
/* Removal does not descend further than this (a pod directory is shallow). */
#define MAX_TREE_DEPTH 64

struct kc_volume_manager {
        char *root_dir;
        char *pods_dir;
        uint64_t node_memory;
        char *node_hosts_file;
};

int kc__volume_manager_new(const struct kc_volume_manager_config *cfg,
                           struct kc_volume_manager **ret)
{
        _cleanup_(kc__volume_manager_freep) struct kc_volume_manager *vm = NULL;

        if (!cfg || !ret || !cfg->root_dir || !*cfg->root_dir)
                return -EINVAL;
        vm = calloc(1, sizeof(*vm));
        if (!vm)
                return -ENOMEM;
        vm->root_dir = strdup(cfg->root_dir);
        vm->node_hosts_file = strdup(cfg->node_hosts_file ? cfg->node_hosts_file : "/etc/hosts");
        if (!vm->root_dir || !vm->node_hosts_file ||
            asprintf(&vm->pods_dir, "%s/pods", cfg->root_dir) < 0) {
                vm->pods_dir = NULL;
                return -ENOMEM;
        }
        vm->node_memory = cfg->node_memory_bytes;
        if (!vm->node_memory) {
                long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

                if (pages > 0 && size > 0)
                        vm->node_memory = (uint64_t)pages * (uint64_t)size;
        }
        *ret = TAKE_PTR(vm);
        return 0;
}

struct kc_volume_manager *kc__volume_manager_free(struct kc_volume_manager *vm)
{
        if (vm) {
                free(vm->root_dir);
                free(vm->pods_dir);
                free(vm->node_hosts_file);
                free(vm);
        }
        return NULL;
}

const char *kc__volume_manager_node_hosts_file(const struct kc_volume_manager *vm)
{
        return vm->node_hosts_file;
}

/* A name that is exactly one path component (a UID, a volume name). */
static bool one_component(const char *s)
{
        return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int kc__volume_manager_pod_dir(const struct kc_volume_manager *vm, const char *uid, char **ret)
{
        char *p;

        if (!one_component(uid))
                return -EINVAL;
        if (asprintf(&p, "%s/%s", vm->pods_dir, uid) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* os.MkdirAll: every missing component of @p path with @p mode; an existing
 * non-directory is -ENOTDIR. */
static int mkdir_all(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = NULL;
        struct stat st;

        if (!*path)
                return -EINVAL;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                bool end = *s == '\0';

                if (*s != '/' && !end)
                        continue;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                if (end)
                        break;
                *s = '/';
        }
        if (stat(path, &st) < 0)
                return -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int kc__make_pod_data_dirs(const struct kc_volume_manager *vm, const struct kc_api_pod *pod)
{
        static const char *const subdirs[] = { "", "/volumes", "/plugins" };
        _cleanup_free_ char *dir = NULL;
        int r;

        r = kc__volume_manager_pod_dir(vm, pod->uid, &dir);
        if (r < 0)
                return r;
        for (size_t i = 0; i < KC_ELEMENTSOF(subdirs); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s%s", dir, subdirs[i]) < 0)
                        return -ENOMEM;
                r = mkdir_all(p, POD_DIR_MODE);
                if (r < 0)
                        return r;
        }
        return 0;
}

int kc__make_pod_container_dir(const struct kc_volume_manager *vm, const char *uid,
                               const char *name, char **ret)
{
        _cleanup_free_ char *dir = NULL, *p = NULL;
        int r;

        if (!one_component(name))
                return -EINVAL;
        r = kc__volume_manager_pod_dir(vm, uid, &dir);
        if (r < 0)
                return r;
        if (asprintf(&p, "%s/containers/%s", dir, name) < 0)
                return -ENOMEM;
        r = mkdir_all(p, POD_DIR_MODE);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* hostutil.GetFileType's names; NULL for a type it does not recognise. */
static const char *file_type_name(mode_t m)
{
        if (S_ISDIR(m))
                return "Directory";
        if (S_ISREG(m))
                return "File";
        if (S_ISSOCK(m))
                return "Socket";
        if (S_ISCHR(m))
                return "CharDevice";
        if (S_ISBLK(m))
                return "BlockDevice";
        return NULL;
}

/* typeMatchedOrError: @p path exists and is of @p want (described as @p desc). */
static int type_matched(const char *path, const char *want, const char *desc, char **ret_msg)
{
        struct stat st;
        const char *got;

        if (stat(path, &st) < 0) {
                if (asprintf(ret_msg, "hostPath %s doesn't exist", path) < 0)
                        *ret_msg = NULL;
                return -ENOENT;
        }
        got = file_type_name(st.st_mode);
        if (!got) {
                if (asprintf(ret_msg,
                             "hostPath type check failed, %s is not a %s, unable to determine its "
                             "type: only recognise file, directory, socket, block device and "
                             "character device",
                             path, desc) < 0)
                        *ret_msg = NULL;
                return -EINVAL;
        }
        if (strcmp(got, want) != 0) {
                if (asprintf(ret_msg, "hostPath type check failed: %s is not a %s, it's a %s", path,
                             desc, got) < 0)
                        *ret_msg = NULL;
                return -EINVAL;
        }
        return 0;
}

/* A Go-like "<op> <path>: <strerror>" for a failed creation. */
static int path_error(const char *op, const char *path, int r, char **ret_msg)
{
        if (asprintf(ret_msg, "%s %s: %s", op, path, strerror(-r)) < 0)
                *ret_msg = NULL;
        return r;
}

/*
 * checkType: DirectoryOrCreate makes the directory (0755, with its parents),
 * FileOrCreate an empty file (0644; its directory must exist, as upstream),
 * then both check like Directory and File; no type checks nothing.
 */
static int check_host_path(const char *path, enum kc_host_path_type type, char **ret_msg)
{
        struct stat st;
        int r;

        switch (type) {
        case KC_HOST_PATH_UNSET:
                return 0;
        case KC_HOST_PATH_DIRECTORY_OR_CREATE:
                if (stat(path, &st) < 0 && (r = mkdir_all(path, HOST_PATH_DIR_MODE)) < 0)
                        return path_error("mkdir", path, r, ret_msg);
                /* fallthrough */
        case KC_HOST_PATH_DIRECTORY:
                return type_matched(path, "Directory", "directory", ret_msg);
        case KC_HOST_PATH_FILE_OR_CREATE:
                if (stat(path, &st) < 0) {
                        int fd = open(path, O_CREAT | O_RDONLY | O_CLOEXEC, HOST_PATH_FILE_MODE);

                        if (fd < 0 && errno != EEXIST)
                                return path_error("open", path, -errno, ret_msg);
                        if (fd >= 0)
                                close(fd);
                }
                /* fallthrough */
        case KC_HOST_PATH_FILE:
                return type_matched(path, "File", "file", ret_msg);
        case KC_HOST_PATH_SOCKET:
                return type_matched(path, "Socket", "socket file", ret_msg);
        case KC_HOST_PATH_CHAR_DEVICE:
                return type_matched(path, "CharDevice", "character device", ret_msg);
        case KC_HOST_PATH_BLOCK_DEVICE:
                return type_matched(path, "BlockDevice", "block device", ret_msg);
        default:
                if (asprintf(ret_msg, "%d is an invalid volume type", (int)type) < 0)
                        *ret_msg = NULL;
                return -EINVAL;
        }
}

/* Whether @p path is the root of a mount (its device differs from its parent's). */
static bool is_mount_point(const char *path)
{
        _cleanup_free_ char *parent = NULL;
        struct stat a, b;

        if (asprintf(&parent, "%s/..", path) < 0)
                return false;
        if (lstat(path, &a) < 0 || lstat(parent, &b) < 0)
                return false;
        return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

/* The bytes of a quantity (its thousandths rounded up). */
static uint64_t quantity_bytes(const struct kc_api_quantity *q)
{
        return q->milli <= 0 ? 0 : (uint64_t)((q->milli + 999) / 1000);
}

/* A container's memory limit in bytes; 0 when it has none. */
static uint64_t memory_limit(const struct kc_api_container *c)
{
        for (size_t i = 0; i < c->resources.n_limits; i++)
                if (strcmp(c->resources.limits[i].name, "memory") == 0)
                        return quantity_bytes(&c->resources.limits[i].q);
        return 0;
}

/*
 * The pod's memory limit as ResourceConfigForPod sees it: only when every
 * container declares one; max(sum of app containers, largest init
 * container). 0: none.
 */
static uint64_t pod_memory_limit(const struct kc_api_pod *pod)
{
        uint64_t sum = 0, init = 0, l;
        size_t i;

        for (i = 0; i < pod->n_containers; i++) {
                if (!(l = memory_limit(&pod->containers[i])))
                        return 0;
                sum += l;
        }
        for (i = 0; i < pod->n_init_containers; i++) {
                if (!(l = memory_limit(&pod->init_containers[i])))
                        return 0;
                init = l > init ? l : init;
        }
        return sum > init ? sum : init;
}

/* calculateEmptyDirMemorySize: node allocatable, lowered by the pod's memory
 * limit, then by the volume's sizeLimit (each only when 0 < it <= size). */
static uint64_t empty_dir_memory_size(const struct kc_volume_manager *vm,
                                      const struct kc_api_pod *pod, const struct kc_api_volume *v)
{
        uint64_t size = vm->node_memory, l = pod_memory_limit(pod);

        if (l > 0 && l <= size)
                size = l;
        if (v->has_size_limit) {
                l = quantity_bytes(&v->size_limit);
                if (l > 0 && l <= size)
                        size = l;
        }
        return size;
}

/* The emptyDir's directory (0777) and, for medium Memory, its tmpfs. */
static int make_empty_dir(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                          const struct kc_api_volume *v, const char *path, char **ret_msg)
{
        char opts[64];
        int r;

        r = mkdir_all(path, POD_DIR_MODE);
        if (r < 0 || chmod(path, EMPTY_DIR_MODE) < 0)
                return path_error("mkdir", path, r < 0 ? r : -errno, ret_msg);
        if (!v->medium_memory) {
                if (v->has_size_limit)
                        kc_log_v_s(2, "emptyDir sizeLimit on node disk is not enforced (D42)",
                                   KC_KV_POD(pod->namespace, pod->name),
                                   KC_KV_STR("volume", v->name));
                return 0;
        }
        snprintf(opts, sizeof(opts), "size=%" PRIu64, empty_dir_memory_size(vm, pod, v));
        if (mount("tmpfs", path, "tmpfs", 0, opts) < 0) {
                r = -errno;
                if (asprintf(ret_msg, "mount failed: tmpfs on %s (%s): %s", path, opts,
                             strerror(-r)) < 0)
                        *ret_msg = NULL;
                return r;
        }
        kc_log_v_s(3, "Mounted a memory-backed emptyDir", KC_KV_POD(pod->namespace, pod->name),
                   KC_KV_STR("volume", v->name), KC_KV_STR("options", opts));
        return 0;
}

/*
 * SetVolumeOwnership for the pod's fsGroup on an emptyDir's root: group
 * fsGroup, group read/write/search and setgid, so what the containers make
 * in it is the group's. Failures are logged and the setup goes on, as
 * upstream. The volume is not walked: it is empty when first set up, and
 * later syncs only re-apply this to its root (D52).
 */
static void set_volume_ownership(const struct kc_api_pod *pod, const char *path)
{
        const struct kc_opt_i64 *g = &pod->security_context.fs_group;
        struct stat st;

        if (!g->set)
                return;
        if (lchown(path, (uid_t)-1, (gid_t)g->v) < 0)
                kc_log_error_s(strerror(errno), "Lchown failed", KC_KV_STR("path", path));
        if (lstat(path, &st) < 0 ||
            chmod(path, (st.st_mode & 07777) | FS_GROUP_DIR_MASK | S_ISGID) < 0)
                kc_log_error_s(strerror(errno), "chmod failed", KC_KV_STR("path", path));
}

/* emptyDir SetUpAt: the directory (0777), a tmpfs on it for medium Memory, then fsGroup. */
static int set_up_empty_dir(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                            const struct kc_api_volume *v, char **ret_msg)
{
        _cleanup_free_ char *dir = NULL, *path = NULL;
        int r;

        r = kc__volume_manager_pod_dir(vm, pod->uid, &dir);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/volumes/" KC_EMPTY_DIR_PLUGIN_DIR "/%s", dir, v->name) < 0)
                return -ENOMEM;
        /* a Memory one mounted by an earlier sync is kept */
        if (!(v->medium_memory && is_mount_point(path))) {
                r = make_empty_dir(vm, pod, v, path, ret_msg);
                if (r < 0)
                        return r;
        }
        set_volume_ownership(pod, path);
        return 0;
}

/* The volume named @p name in the pod's spec, or NULL. */
static const struct kc_api_volume *find_volume(const struct kc_api_pod *pod, const char *name)
{
        for (size_t i = 0; i < pod->n_volumes; i++)
                if (strcmp(pod->volumes[i].name, name) == 0)
                        return &pod->volumes[i];
        return NULL;
}

/* MountVolume.SetUp for one volume; *ret_msg says why it failed. */
static int set_up_volume(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                         const struct kc_api_volume *v, char **ret_msg)
{
        if (!one_component(v->name)) {
                *ret_msg = strdup("invalid volume name");
                return -EINVAL;
        }
        switch (v->kind) {
        case KC_VOLUME_HOST_PATH:
                if (!v->host_path || !*v->host_path) {
                        *ret_msg = strdup("hostPath.path is required");
                        return -EINVAL;
                }
                return check_host_path(v->host_path, v->host_path_type, ret_msg);
        case KC_VOLUME_EMPTY_DIR:
                return set_up_empty_dir(vm, pod, v, ret_msg);
        default:
                if (asprintf(ret_msg,
                             "%s volumes need the API server or a volume plugin, which cubelet "
                             "does not have",
                             v->kind_name ? v->kind_name : "these") < 0)
                        *ret_msg = NULL;
                return -EAGAIN;
        }
}

/* A sorted set of names: the volumes containers mount, or those that failed. */
struct names {
        const char **v;
        size_t n;
};

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool names_has(const struct names *s, const char *name)
{
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], name) == 0)
                        return true;
        return false;
}

/* getExpectedVolumes: the names every container (init ones too) mounts. */
static int expected_volumes(const struct kc_api_pod *pod, struct names *ret)
{
        const struct kc_api_container *lists[2] = { pod->init_containers, pod->containers };
        size_t counts[2] = { pod->n_init_containers, pod->n_containers }, total = 0;

        for (int l = 0; l < 2; l++)
                for (size_t i = 0; i < counts[l]; i++)
                        total += lists[l][i].n_volume_mounts;
        ret->n = 0;
        ret->v = calloc(total + 1, sizeof(*ret->v));
        if (!ret->v)
                return -ENOMEM;
        for (int l = 0; l < 2; l++)
                for (size_t i = 0; i < counts[l]; i++)
                        for (size_t m = 0; m < lists[l][i].n_volume_mounts; m++) {
                                const char *name = lists[l][i].volume_mounts[m].name;

                                if (name && !names_has(ret, name))
                                        ret->v[ret->n++] = name;
                        }
        qsort(ret->v, ret->n, sizeof(*ret->v), cmp_str);
        return 0;
}

/* Appends Go's %v of a []string ("[a b]") to @p f. */
static void print_names(FILE *f, const struct names *s)
{
        fputc('[', f);
        for (size_t i = 0; i < s->n; i++)
                fprintf(f, "%s%s", i ? " " : "", s->v[i]);
        fputc(']', f);
}

/* WaitForAttachAndMount's error: "unmounted volumes=[..], unattached
 * volumes=[], failed to process volumes=[..]: <errors joined by "; ">". */
static char *mount_error(const struct names *unmounted, const struct names *unknown,
                         const char *why)
{
        const struct names none = { 0 };
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        fputs("unmounted volumes=", f);
        print_names(f, unmounted);
        fputs(", unattached volumes=", f);
        print_names(f, &none);
        fputs(", failed to process volumes=", f);
        print_names(f, unknown);
        fprintf(f, ": %s", why);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Sets up each expected volume; fills @p unmounted, @p unknown and the errors in @p why. */
static void set_up_expected(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                            const struct names *expected, struct names *unmounted,
                            struct names *unknown, FILE *why)
{
        for (size_t i = 0; i < expected->n; i++) {
                const struct kc_api_volume *v = find_volume(pod, expected->v[i]);
                _cleanup_free_ char *msg = NULL;
                int r;

                if (!v) {
                        unmounted->v[unmounted->n++] = expected->v[i];
                        unknown->v[unknown->n++] = expected->v[i];
                        kc_log_error_s("no such volume in spec.volumes",
                                       "Volume cannot be processed for pod",
                                       KC_KV_POD(pod->namespace, pod->name),
                                       KC_KV_STR("volumeName", expected->v[i]));
                        continue;
                }
                r = set_up_volume(vm, pod, v, &msg);
                if (r >= 0)
                        continue;
                unmounted->v[unmounted->n++] = v->name;
                fprintf(why, "%sMountVolume.SetUp failed for volume \"%s\" : %s",
                        ftell(why) ? "; " : "", v->name, msg ? msg : strerror(-r));
                kc_log_error_s(msg ? msg : strerror(-r), "MountVolume.SetUp failed for volume",
                               KC_KV_POD(pod->namespace, pod->name), KC_KV_STR("podUID", pod->uid),
                               KC_KV_STR("volumeName", v->name),
                               KC_KV_STR("volumeKind", v->kind_name));
        }
}

int kc__wait_for_attach_and_mount(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                                  char **ret_msg)
{
        struct names expected = { 0 }, unmounted = { 0 }, unknown = { 0 };
        _cleanup_free_ char *why = NULL;
        size_t why_len = 0;
        FILE *f;
        int r = 0;

        if (expected_volumes(pod, &expected) < 0)
                return -ENOMEM;
        if (expected.n == 0)
                goto out;
        kc_log_v_s(3, "Waiting for volumes to attach and mount for pod",
                   KC_KV_POD(pod->namespace, pod->name));
        unmounted.v = calloc(expected.n, sizeof(*unmounted.v));
        unknown.v = calloc(expected.n, sizeof(*unknown.v));
        f = open_memstream(&why, &why_len);
        if (!unmounted.v || !unknown.v || !f) {
                if (f)
                        fclose(f);
                r = -ENOMEM;
                goto out;
        }
        set_up_expected(vm, pod, &expected, &unmounted, &unknown, f);
        if (unknown.n)
                fprintf(f, "%svolumes not in spec.volumes", ftell(f) ? "; " : "");
        if (fclose(f) != 0) {
                r = -ENOMEM;
                goto out;
        }
        if (unmounted.n == 0) {
                kc_log_v_s(3, "All volumes are attached and mounted for pod",
                           KC_KV_POD(pod->namespace, pod->name));
                goto out;
        }
        *ret_msg = mount_error(&unmounted, &unknown, why ? why : "");
        kc_log_error_s(*ret_msg, "Unable to attach or mount volumes for pod; skipping pod",
                       KC_KV_POD(pod->namespace, pod->name));
        r = -EAGAIN;
out:
        free(expected.v);
        free(unmounted.v);
        free(unknown.v);
        return r;
}

/*
 * Removes @p name below @p parent_fd: a directory recursively, anything else
 * (symlinks included) unlinked, never followed. A directory on another
 * device than @p dev is a mount point: -EBUSY, left in place.
 */
static int remove_tree(int parent_fd, const char *name, dev_t dev, int depth)
{
        struct stat st;
        DIR *d;
        struct dirent *e;
        int fd, r = 0;

        if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(parent_fd, name, 0) < 0 ? -errno : 0;
        if (st.st_dev != dev)
                return -EBUSY;
        if (depth > MAX_TREE_DEPTH)
                return -ELOOP;
        fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        while ((e = readdir(d))) {
                int q;

                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                q = remove_tree(dirfd(d), e->d_name, dev, depth + 1);
                if (q < 0 && r == 0)
                        r = q;
        }
        closedir(d);
        if (r < 0)
                return r;
        return unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* emptyDir TearDownAt for every emptyDir of a pod: tmpfs ones are unmounted. */
static int tear_down_empty_dirs(const char *pod_dir)
{
        _cleanup_free_ char *dir = NULL;
        DIR *d;
        struct dirent *e;
        int r = 0;

        if (asprintf(&dir, "%s/volumes/" KC_EMPTY_DIR_PLUGIN_DIR, pod_dir) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((e = readdir(d))) {
                _cleanup_free_ char *p = NULL;

                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (is_mount_point(p) && umount2(p, UMOUNT_NOFOLLOW) < 0 && r == 0)
                        r = -errno;
        }
        closedir(d);
        return r;
}

/* Removes one orphaned pod's directory: 1 when removed, else -errno (kept). */
static int remove_pod_dir(const struct kc_volume_manager *vm, int pods_fd, dev_t dev,
                          const char *uid)
{
        _cleanup_free_ char *dir = NULL;
        int r;

        r = kc__volume_manager_pod_dir(vm, uid, &dir);
        if (r < 0)
                return r;
        kc_log_v_s(3, "Orphaned pod found, removing", KC_KV_STR("podUID", uid));
        r = tear_down_empty_dirs(dir);
        if (r < 0) {
                kc_log_errno_s(r, "Orphaned pod found, but failed to unmount its volumes",
                               KC_KV_STR("podUID", uid));
                return r;
        }
        r = remove_tree(pods_fd, uid, dev, 0);
        if (r < 0) {
                kc_log_errno_s(r, "Orphaned pod found, but failed to remove its directory",
                               KC_KV_STR("podUID", uid), KC_KV_STR("path", dir));
                return r;
        }
        return 1;
}

int kc__cleanup_orphaned_pod_dirs(const struct kc_volume_manager *vm, const char *const *keep,
                                  size_t n_keep)
{
        _cleanup_free_ const char **sorted = NULL;
        _cleanup_close_ int pods_fd = -1;
        struct stat st;
        struct dirent *e;
        DIR *d;
        int removed = 0;

        pods_fd = open(vm->pods_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pods_fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(pods_fd, &st) < 0)
                return -errno;
        sorted = malloc((n_keep + 1) * sizeof(*sorted));
        if (!sorted)
                return -ENOMEM;
        if (n_keep)
                memcpy(sorted, keep, n_keep * sizeof(*sorted));
        qsort(sorted, n_keep, sizeof(*sorted), cmp_str);
        d = opendir(vm->pods_dir);
        if (!d)
                return -errno;
        while ((e = readdir(d))) {
                const char *uid = e->d_name;
                struct stat est;

                if (!one_component(uid) || bsearch(&uid, sorted, n_keep, sizeof(*sorted), cmp_str))
                        continue;
                /* listPodsFromDisk: directories only (a symlink is not one). */
                if (fstatat(pods_fd, uid, &est, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(est.st_mode))
                        continue;
                if (remove_pod_dir(vm, pods_fd, st.st_dev, uid) > 0)
                        removed++;
        }
        closedir(d);
        return removed;
}
