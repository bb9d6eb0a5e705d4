/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's pod directories and volumes (kubelet/volume_manager.c,
 * kubelet/pod_mounts.c), issue 14, on a temporary --root-dir: makePodDataDirs,
 * hostPath's type checks and their errors, emptyDir on disk and as tmpfs
 * (fsGroup ownership included),
 * volumes that need the API server making the pod wait,
 * cleanupOrphanedPodDirs, makeMounts (readOnly, propagation, subPath,
 * subPathExpr) and the managed /etc/hosts.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "volume_manager.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#define MIB (INT64_C(1024) * 1024)

struct fixture {
        char root[64];
        char path[PATH_MAX]; /* scratch */
        struct kc_volume_manager *vm;
        struct kc_arena *a;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct kc_volume_manager_config cfg = { .node_memory_bytes = 256 * MIB };

        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/kc-vm-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        cfg.root_dir = f->root;
        assert_int_equal(kc__volume_manager_new(&cfg, &f->vm), 0);
        assert_int_equal(kc_arena_new(&f->a), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[128];

        /* Anything a failed test left mounted goes first. */
        assert_true(kc__cleanup_orphaned_pod_dirs(f->vm, NULL, 0) >= 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
        assert_int_equal(system(cmd), 0);
        kc__volume_manager_free(f->vm);
        kc_arena_free(f->a);
        free(f);
        return 0;
}

static const char *at(struct fixture *f, const char *rel)
{
        snprintf(f->path, sizeof(f->path), "%s/%s", f->root, rel);
        return f->path;
}

static mode_t mode_of(const char *path)
{
        struct stat st;

        assert_int_equal(lstat(path, &st), 0);
        return st.st_mode;
}

static bool exists(const char *path)
{
        struct stat st;

        return lstat(path, &st) == 0;
}

/* A pod "p" (uid "u1") whose one container mounts each volume at /v/<name>. */
struct pod_builder {
        struct kc_api_volume vols[8];
        struct kc_api_volume_mount mounts[8];
        struct kc_api_container c;
        struct kc_api_pod pod;
        size_t n;
};

static struct kc_api_volume *add_volume(struct pod_builder *b, const char *name,
                                        enum kc_volume_kind kind, const char *kind_name,
                                        bool mounted)
{
        struct kc_api_volume *v = &b->vols[b->pod.n_volumes++];
        static char paths[8][32];

        *v = (struct kc_api_volume){ .name = name, .kind = kind, .kind_name = kind_name };
        if (mounted) {
                size_t i = b->c.n_volume_mounts++;

                snprintf(paths[i], sizeof(paths[0]), "/v/%s", name);
                b->mounts[i] = (struct kc_api_volume_mount){ .name = name, .mount_path = paths[i] };
        }
        return v;
}

static void init_pod(struct pod_builder *b)
{
        memset(b, 0, sizeof(*b));
        b->c = (struct kc_api_container){ .name = "app",
                                          .image = "busybox",
                                          .volume_mounts = b->mounts };
        b->pod = (struct kc_api_pod){ .uid = "u1",
                                      .name = "p",
                                      .namespace = "ns",
                                      .containers = &b->c,
                                      .n_containers = 1,
                                      .volumes = b->vols };
}

/* WaitForAttachAndMount of a pod with one mounted hostPath volume. */
static int host_path(struct fixture *f, const char *path, enum kc_host_path_type t, char **msg)
{
        struct pod_builder b;
        struct kc_api_volume *v;

        init_pod(&b);
        v = add_volume(&b, "h", KC_VOLUME_HOST_PATH, "hostPath", true);
        v->host_path = path;
        v->host_path_type = t;
        return kc__wait_for_attach_and_mount(f->vm, &b.pod, msg);
}

/* The text after WaitForAttachAndMount's prefix for the one volume "h". */
static void expect_host_path_error(struct fixture *f, const char *path, enum kc_host_path_type t,
                                   const char *fmt)
{
        char want[2 * PATH_MAX], why[PATH_MAX];
        _cleanup_free_ char *msg = NULL;

        snprintf(why, sizeof(why), fmt, path);
        snprintf(want, sizeof(want),
                 "unmounted volumes=[h], unattached volumes=[], failed to process volumes=[]: "
                 "MountVolume.SetUp failed for volume \"h\" : %s",
                 why);
        assert_true(host_path(f, path, t, &msg) < 0);
        assert_non_null(msg);
        assert_string_equal(msg, want);
}

static void test_pod_data_dirs(void **state)
{
        struct fixture *f = *state;
        struct pod_builder b;

        init_pod(&b);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(mode_of(at(f, "pods/u1")) & 07777, 0750);
        assert_true(S_ISDIR(mode_of(at(f, "pods/u1/volumes"))));
        assert_true(S_ISDIR(mode_of(at(f, "pods/u1/plugins"))));
        /* Idempotent. */
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        /* A UID that is not one path component is refused. */
        b.pod.uid = "../escape";
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), -EINVAL);
        b.pod.uid = "..";
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), -EINVAL);
}

static void test_host_path_create(void **state)
{
        struct fixture *f = *state;
        char dir[PATH_MAX], file[PATH_MAX];
        char *msg = NULL;

        umask(022);
        snprintf(dir, sizeof(dir), "%s/host/a/b", f->root);
        assert_int_equal(host_path(f, dir, KC_HOST_PATH_DIRECTORY_OR_CREATE, &msg), 0);
        assert_null(msg);
        assert_int_equal(mode_of(dir) & 07777, 0755);
        assert_true(S_ISDIR(mode_of(dir)));
        snprintf(file, sizeof(file), "%s/host/a/f", f->root);
        assert_int_equal(host_path(f, file, KC_HOST_PATH_FILE_OR_CREATE, &msg), 0);
        assert_true(S_ISREG(mode_of(file)));
        assert_int_equal(mode_of(file) & 07777, 0644);
        /* Existing ones pass the same checks. */
        assert_int_equal(host_path(f, dir, KC_HOST_PATH_DIRECTORY, &msg), 0);
        assert_int_equal(host_path(f, file, KC_HOST_PATH_FILE, &msg), 0);
        assert_int_equal(host_path(f, dir, KC_HOST_PATH_DIRECTORY_OR_CREATE, &msg), 0);
        assert_int_equal(host_path(f, file, KC_HOST_PATH_FILE_OR_CREATE, &msg), 0);
        /* No type: nothing is checked, not even existence. */
        assert_int_equal(host_path(f, "/nonexistent/kc", KC_HOST_PATH_UNSET, &msg), 0);
        assert_null(msg);
}

static void test_host_path_errors(void **state)
{
        struct fixture *f = *state;
        char dir[PATH_MAX], file[PATH_MAX], missing[PATH_MAX];

        snprintf(dir, sizeof(dir), "%s", f->root);
        snprintf(file, sizeof(file), "%s/file", f->root);
        snprintf(missing, sizeof(missing), "%s/none/f", f->root);
        fclose(fopen(file, "we"));
        expect_host_path_error(f, file, KC_HOST_PATH_DIRECTORY,
                               "hostPath type check failed: %s is not a directory, it's a File");
        expect_host_path_error(f, file, KC_HOST_PATH_DIRECTORY_OR_CREATE,
                               "hostPath type check failed: %s is not a directory, it's a File");
        expect_host_path_error(f, dir, KC_HOST_PATH_FILE,
                               "hostPath type check failed: %s is not a file, it's a Directory");
        expect_host_path_error(f, dir, KC_HOST_PATH_FILE_OR_CREATE,
                               "hostPath type check failed: %s is not a file, it's a Directory");
        expect_host_path_error(f, missing, KC_HOST_PATH_DIRECTORY, "hostPath %s doesn't exist");
        expect_host_path_error(f, missing, KC_HOST_PATH_FILE, "hostPath %s doesn't exist");
        expect_host_path_error(f, missing, KC_HOST_PATH_SOCKET, "hostPath %s doesn't exist");
        expect_host_path_error(f, "", KC_HOST_PATH_DIRECTORY_OR_CREATE,
                               "hostPath.path is required%s");
        /* FileOrCreate does not make the file's directory (upstream's makeFile). */
        expect_host_path_error(f, missing, KC_HOST_PATH_FILE_OR_CREATE,
                               "open %s: No such file or directory");
        expect_host_path_error(f, file, KC_HOST_PATH_SOCKET,
                               "hostPath type check failed: %s is not a socket file, it's a File");
        expect_host_path_error(
                f, file, KC_HOST_PATH_CHAR_DEVICE,
                "hostPath type check failed: %s is not a character device, it's a File");
        expect_host_path_error(
                f, "/dev/null", KC_HOST_PATH_BLOCK_DEVICE,
                "hostPath type check failed: %s is not a block device, it's a CharDevice");
}

static void test_host_path_special_files(void **state)
{
        struct fixture *f = *state;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char fifo[PATH_MAX];
        char *msg = NULL;
        int fd;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", f->root);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(host_path(f, sa.sun_path, KC_HOST_PATH_SOCKET, &msg), 0);
        close(fd);
        assert_int_equal(host_path(f, "/dev/null", KC_HOST_PATH_CHAR_DEVICE, &msg), 0);
        assert_null(msg);
        /* A FIFO is none of the known types. */
        snprintf(fifo, sizeof(fifo), "%s/fifo", f->root);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        expect_host_path_error(f, fifo, KC_HOST_PATH_FILE,
                               "hostPath type check failed, %s is not a file, unable to determine "
                               "its type: only recognise file, directory, socket, block device "
                               "and character device");
}

static void test_empty_dir_on_disk(void **state)
{
        struct fixture *f = *state;
        struct pod_builder b;
        struct kc_api_volume *v;
        char *msg = NULL;

        init_pod(&b);
        v = add_volume(&b, "cache", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        v->has_size_limit = true;
        v->size_limit = (struct kc_api_quantity){ .text = "1Mi", .milli = 1000 * MIB };
        /* Not mounted by any container: left alone, as upstream's populator does. */
        add_volume(&b, "unused", KC_VOLUME_EMPTY_DIR, "emptyDir", false);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_null(msg);
        at(f, "pods/u1/volumes/kubernetes.io~empty-dir/cache");
        assert_true(S_ISDIR(mode_of(f->path)));
        assert_int_equal(mode_of(f->path) & 07777, 0777);
        assert_false(exists(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/unused")));
        /* Idempotent: the next sync sets it up again without complaint. */
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
}

/*
 * securityContext.fsGroup (SetVolumeOwnership): an emptyDir is the
 * fsGroup's, group rwx and setgid, on disk and as tmpfs (whose root keeps
 * its sticky bit); a hostPath is left alone.
 */
static void test_empty_dir_fs_group(void **state)
{
        struct fixture *f = *state;
        struct pod_builder b;
        struct kc_api_volume *v;
        struct stat st;
        char *msg = NULL;
        gid_t gid = geteuid() == 0 ? 2000 : getegid();

        init_pod(&b);
        b.pod.security_context.fs_group = (struct kc_opt_i64){ true, gid };
        add_volume(&b, "cache", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        v = add_volume(&b, "host", KC_VOLUME_HOST_PATH, "hostPath", true);
        v->host_path = f->root;
        if (geteuid() == 0) {
                v = add_volume(&b, "shm", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
                v->medium_memory = true;
        }
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_null(msg);
        assert_int_equal(lstat(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/cache"), &st), 0);
        assert_int_equal(st.st_gid, gid);
        assert_int_equal(st.st_mode & 07777, 02777);
        /* The next sync keeps it so (the 0777 chmod does not drop setgid). */
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_int_equal(mode_of(f->path) & 07777, 02777);
        assert_int_equal(lstat(f->root, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700); /* mkdtemp's */
        if (geteuid() != 0)
                return;
        assert_int_not_equal(st.st_gid, gid);
        assert_int_equal(lstat(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/shm"), &st), 0);
        assert_int_equal(st.st_gid, gid);
        assert_int_equal(st.st_mode & 07777, 03777);
}

/* The bytes of the filesystem at @p path, and whether it is a tmpfs. */
static uint64_t fs_size(const char *path, bool *tmpfs)
{
        struct statfs s;

        assert_int_equal(statfs(path, &s), 0);
        *tmpfs = s.f_type == TMPFS_MAGIC;
        return (uint64_t)s.f_blocks * (uint64_t)s.f_bsize;
}

static void test_empty_dir_memory(void **state)
{
        struct fixture *f = *state;
        struct kc_api_resource lim = { .name = "memory",
                                       .q = { .text = "64Mi", .milli = 64 * MIB * 1000 } };
        struct pod_builder b;
        struct kc_api_volume *v, *w;
        char *msg = NULL;
        bool tmpfs;
        const char *keep[] = { "u1" };

        if (geteuid() != 0)
                skip();
        init_pod(&b);
        v = add_volume(&b, "shm", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        v->medium_memory = true;
        v->has_size_limit = true;
        v->size_limit = (struct kc_api_quantity){ .text = "8Mi", .milli = 8 * MIB * 1000 };
        w = add_volume(&b, "big", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        w->medium_memory = true; /* no sizeLimit: the pod's memory limit */
        b.c.resources = (struct kc_api_resources){ .limits = &lim, .n_limits = 1 };
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_null(msg);
        assert_int_equal(fs_size(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/shm"), &tmpfs),
                         8 * MIB);
        assert_true(tmpfs);
        assert_int_equal(fs_size(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/big"), &tmpfs),
                         64 * MIB);
        assert_true(tmpfs);
        /* A second sync does not stack another tmpfs on it. */
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_int_equal(umount2(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/shm"), 0), 0);
        fs_size(f->path, &tmpfs);
        assert_false(tmpfs);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        /* Without limits, the node's allocatable memory (256 MiB here). */
        b.c.resources.n_limits = 0;
        b.pod.uid = "u2";
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_int_equal(fs_size(at(f, "pods/u2/volumes/kubernetes.io~empty-dir/big"), &tmpfs),
                         256 * MIB);
        /* Housekeeping: u2 goes (its tmpfs unmounted first), u1 stays. */
        assert_int_equal(kc__cleanup_orphaned_pod_dirs(f->vm, keep, 1), 1);
        assert_false(exists(at(f, "pods/u2")));
        fs_size(at(f, "pods/u1/volumes/kubernetes.io~empty-dir/shm"), &tmpfs);
        assert_true(tmpfs);
        assert_int_equal(kc__cleanup_orphaned_pod_dirs(f->vm, NULL, 0), 1);
        assert_false(exists(at(f, "pods/u1")));
}

static void test_api_volumes_wait(void **state)
{
        struct fixture *f = *state;
        struct pod_builder b;
        _cleanup_free_ char *msg = NULL;
        char *none = NULL;

        init_pod(&b);
        add_volume(&b, "token", KC_VOLUME_OTHER, "projected", true);
        add_volume(&b, "cfg", KC_VOLUME_OTHER, "configMap", true);
        add_volume(&b, "data", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), -EAGAIN);
        assert_string_equal(msg, "unmounted volumes=[cfg token], unattached volumes=[], failed to "
                                 "process volumes=[]: MountVolume.SetUp failed for volume \"cfg\" "
                                 ": configMap volumes need the API server or a volume plugin, "
                                 "which cubelet does not have; MountVolume.SetUp failed for "
                                 "volume \"token\" : projected volumes need the API server or a "
                                 "volume plugin, which cubelet does not have");
        /* A mount of a volume the spec does not have. */
        free(msg);
        msg = NULL;
        b.mounts[0].name = "ghost";
        b.vols[0].name = "unused";
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), -EAGAIN);
        assert_string_equal(msg, "unmounted volumes=[cfg ghost], unattached volumes=[], failed to "
                                 "process volumes=[ghost]: MountVolume.SetUp failed for volume "
                                 "\"cfg\" : configMap volumes need the API server or a volume "
                                 "plugin, which cubelet does not have; volumes not in "
                                 "spec.volumes");
        /* API volumes no container mounts do not hold the pod. */
        init_pod(&b);
        add_volume(&b, "secret", KC_VOLUME_OTHER, "secret", false);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &none), 0);
        assert_null(none);
}

static void test_cleanup_orphaned_pod_dirs(void **state)
{
        struct fixture *f = *state;
        const char *keep[] = { "u1", "other" };
        struct pod_builder b;
        char outside[PATH_MAX / 2], link[PATH_MAX];

        init_pod(&b);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        b.pod.uid = "u2";
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        /* A symlink in u2's directory to a directory outside it. */
        snprintf(outside, sizeof(outside), "%s/outside", f->root);
        assert_int_equal(mkdir(outside, 0755), 0);
        snprintf(link, sizeof(link), "%s/keepme", outside);
        fclose(fopen(link, "we"));
        snprintf(link, sizeof(link), "%s/pods/u2/volumes/link", f->root);
        assert_int_equal(symlink(outside, link), 0);
        /* Entries of pods/ that are not directories are no pods: left alone. */
        assert_int_equal(symlink(outside, at(f, "pods/not-a-pod")), 0);
        fclose(fopen(at(f, "pods/file"), "we"));
        assert_int_equal(kc__cleanup_orphaned_pod_dirs(f->vm, keep, 2), 1);
        assert_true(exists(at(f, "pods/not-a-pod")));
        assert_true(exists(at(f, "pods/file")));
        assert_false(exists(at(f, "pods/u2")));
        assert_true(exists(at(f, "pods/u1/volumes")));
        assert_true(exists(at(f, "outside/keepme")));
        /* Nothing left to remove; no pods directory at all is no error. */
        assert_int_equal(kc__cleanup_orphaned_pod_dirs(f->vm, keep, 2), 0);
}

static void test_cleanup_keeps_foreign_mounts(void **state)
{
        struct fixture *f = *state;
        struct pod_builder b;
        char sub[PATH_MAX];

        if (geteuid() != 0)
                skip();
        init_pod(&b);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        snprintf(sub, sizeof(sub), "%s/pods/u1/plugins/m", f->root);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(mount("tmpfs", sub, "tmpfs", 0, "size=1m"), 0);
        fclose(fopen(at(f, "pods/u1/plugins/m/data"), "we"));
        /* Not ours to unmount: the directory stays, nothing below the mount is touched. */
        assert_int_equal(kc__cleanup_orphaned_pod_dirs(f->vm, NULL, 0), 0);
        assert_true(exists(at(f, "pods/u1/plugins/m/data")));
        assert_int_equal(umount2(sub, 0), 0);
        assert_int_equal(kc__cleanup_orphaned_pod_dirs(f->vm, NULL, 0), 1);
}

/* makeMounts for b's container, pod IPs @p ips. */
static int make_mounts(struct fixture *f, struct pod_builder *b, const char *const *ips,
                       size_t n_ips, const struct kc_label *envs, size_t n_envs,
                       const struct kc_cri_mount **ret, size_t *n, char **msg)
{
        return kc__make_mounts(f->vm, &b->pod, &b->c, "web", NULL, ips, n_ips, envs, n_envs, f->a,
                               ret, n, msg);
}

static char *read_all(const char *path)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *in = fopen(path, "re"), *out = open_memstream(&buf, &len);
        int c;

        assert_non_null(in);
        assert_non_null(out);
        while ((c = fgetc(in)) != EOF)
                fputc(c, out);
        fclose(in);
        fclose(out);
        return buf;
}

static void test_make_mounts(void **state)
{
        struct fixture *f = *state;
        const char *ips[] = { "10.1.2.3" };
        const struct kc_cri_mount *m = NULL;
        struct pod_builder b;
        struct kc_api_volume *v;
        char *msg = NULL;
        size_t n = 0;

        init_pod(&b);
        v = add_volume(&b, "host", KC_VOLUME_HOST_PATH, "hostPath", true);
        v->host_path = "/var/log";
        add_volume(&b, "data", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        b.mounts[0].read_only = true;
        b.mounts[0].propagation = KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER;
        b.mounts[1].mount_path = "rel/path";
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);
        assert_int_equal(make_mounts(f, &b, ips, 1, NULL, 0, &m, &n, &msg), 0);
        assert_null(msg);
        assert_int_equal(n, 3);
        assert_string_equal(m[0].container_path, "/v/host");
        assert_string_equal(m[0].host_path, "/var/log");
        assert_true(m[0].readonly);
        assert_int_equal(m[0].propagation, KC_CRI_PROPAGATION_HOST_TO_CONTAINER);
        assert_string_equal(m[1].container_path, "/rel/path");
        assert_string_equal(m[1].host_path, at(f, "pods/u1/volumes/kubernetes.io~empty-dir/data"));
        assert_false(m[1].readonly);
        assert_int_equal(m[1].propagation, KC_CRI_PROPAGATION_PRIVATE);
        assert_string_equal(m[2].container_path, "/etc/hosts");
        assert_string_equal(m[2].host_path, at(f, "pods/u1/etc-hosts"));
        assert_false(m[2].readonly);
        assert_true(m[2].selinux_relabel);

        /* Bidirectional: privileged containers only. */
        b.mounts[0].propagation = KC_MOUNT_PROPAGATION_BIDIRECTIONAL;
        assert_int_equal(make_mounts(f, &b, ips, 1, NULL, 0, &m, &n, &msg), -EPERM);
        assert_string_equal(msg, "Bidirectional mount propagation is available only to "
                                 "privileged containers");
        free(msg);
        msg = NULL;
        b.c.security_context =
                &(struct kc_api_security_context){ .present = true, .privileged = KC_OPT_TRUE };
        assert_int_equal(make_mounts(f, &b, ips, 1, NULL, 0, &m, &n, &msg), 0);
        assert_int_equal(m[0].propagation, KC_CRI_PROPAGATION_BIDIRECTIONAL);

        /* A container mounting /etc/hosts itself, or no pod IP yet: no managed file. */
        b.mounts[1].mount_path = "/etc/hosts";
        assert_int_equal(make_mounts(f, &b, ips, 1, NULL, 0, &m, &n, &msg), 0);
        assert_int_equal(n, 2);
        b.mounts[1].mount_path = "/data";
        assert_int_equal(make_mounts(f, &b, NULL, 0, NULL, 0, &m, &n, &msg), 0);
        assert_int_equal(n, 2);

        /* A mount of a volume that is not there. */
        b.mounts[1].name = "ghost";
        assert_int_equal(make_mounts(f, &b, ips, 1, NULL, 0, &m, &n, &msg), -ENOENT);
        assert_string_equal(msg, "cannot find volume \"ghost\" to mount into container \"app\"");
        free(msg);
}

static void test_sub_path(void **state)
{
        struct fixture *f = *state;
        const struct kc_label envs[] = { { "POD", "p-1" }, { "EMPTY", "" } };
        const struct kc_cri_mount *m = NULL;
        struct pod_builder b;
        char *msg = NULL, target[PATH_MAX];
        size_t n = 0;

        init_pod(&b);
        add_volume(&b, "data", KC_VOLUME_EMPTY_DIR, "emptyDir", true);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(kc__wait_for_attach_and_mount(f->vm, &b.pod, &msg), 0);

        b.mounts[0].sub_path = "a/b";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), 0);
        assert_int_equal(n, 1);
        assert_string_equal(m[0].host_path,
                            at(f, "pods/u1/volumes/kubernetes.io~empty-dir/data/a/b"));
        /* Created with the volume's mode. */
        assert_int_equal(mode_of(m[0].host_path) & 07777, 0777);

        /* subPathExpr from the container's environment ($$ escapes). */
        b.mounts[0].sub_path = NULL;
        b.mounts[0].sub_path_expr = "logs/$(POD)/$$x";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), 0);
        assert_string_equal(m[0].host_path,
                            at(f, "pods/u1/volumes/kubernetes.io~empty-dir/data/logs/p-1/$x"));
        b.mounts[0].sub_path_expr = "$(NOPE)/$(EMPTY)";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), -EINVAL);
        assert_string_equal(msg, "missing value for NOPE, EMPTY");
        free(msg);
        msg = NULL;

        b.mounts[0].sub_path_expr = NULL;
        b.mounts[0].sub_path = "/etc";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), -EINVAL);
        assert_string_equal(msg, "error SubPath `/etc` must not be an absolute path");
        free(msg);
        msg = NULL;
        b.mounts[0].sub_path = "a/../../x";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), -EINVAL);
        assert_string_equal(msg, "unable to provision SubPath `a/../../x`: must not contain '..'");
        free(msg);
        msg = NULL;

        /* A symlink in the volume pointing out of it is refused, whether it is
         * the subPath itself or a directory on the way to a new one. */
        snprintf(target, sizeof(target), "%s/outside", f->root);
        assert_int_equal(mkdir(target, 0755), 0);
        assert_int_equal(symlink(target, at(f, "pods/u1/volumes/kubernetes.io~empty-dir/data/l")),
                         0);
        b.mounts[0].sub_path = "l";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), -EPERM);
        assert_string_equal(
                msg, "failed to prepare subPath for volumeMount \"data\" of container \"app\"");
        free(msg);
        msg = NULL;
        b.mounts[0].sub_path = "l/new";
        assert_int_equal(make_mounts(f, &b, NULL, 0, envs, 2, &m, &n, &msg), -EIO);
        assert_string_equal(msg, "failed to create subPath directory for volumeMount \"data\" of "
                                 "container \"app\"");
        free(msg);
        assert_false(exists(at(f, "outside/new")));
}

/* managedHostsFileContent up to the pod's own lines. */
#define MANAGED_HEADER                                                                             \
        "# Kubernetes-managed hosts file.\n"                                                       \
        "127.0.0.1\tlocalhost\n"                                                                   \
        "::1\tlocalhost ip6-localhost ip6-loopback\n"                                              \
        "fe00::0\tip6-localnet\n"                                                                  \
        "fe00::0\tip6-mcastprefix\n"                                                               \
        "fe00::1\tip6-allnodes\n"                                                                  \
        "fe00::2\tip6-allrouters\n"

static void test_etc_hosts(void **state)
{
        struct fixture *f = *state;
        const char *ips[] = { "10.1.2.3", "fd00::3" };
        const char *const names1[] = { "foo.local", "bar.local" };
        const char *const names2[] = { "db" };
        const struct kc_api_host_alias aliases[] = {
                { .ip = "127.0.0.1", .hostnames = names1, .n_hostnames = 2 },
                { .ip = "10.0.0.9", .hostnames = names2, .n_hostnames = 1 },
        };
        const struct kc_cri_mount *m = NULL;
        struct pod_builder b;
        _cleanup_free_ char *plain = NULL, *full = NULL, *host = NULL;
        char *msg = NULL;
        size_t n = 0;
        FILE *nh;

        init_pod(&b);
        assert_int_equal(kc__make_pod_data_dirs(f->vm, &b.pod), 0);
        assert_int_equal(make_mounts(f, &b, ips, 1, NULL, 0, &m, &n, &msg), 0);
        plain = read_all(at(f, "pods/u1/etc-hosts"));
        assert_string_equal(plain, MANAGED_HEADER "10.1.2.3\tweb\n");
        assert_int_equal(mode_of(f->path) & 07777, 0644);

        /* A subdomain, every pod IP, hostAliases. */
        b.pod.host_aliases = aliases;
        b.pod.n_host_aliases = 2;
        assert_int_equal(kc__make_mounts(f->vm, &b.pod, &b.c, "web", "sub.ns.svc.cluster.local",
                                         ips, 2, NULL, 0, f->a, &m, &n, &msg),
                         0);
        full = read_all(at(f, "pods/u1/etc-hosts"));
        assert_string_equal(full, MANAGED_HEADER "10.1.2.3\tweb.sub.ns.svc.cluster.local\tweb\n"
                                                 "fd00::3\tweb.sub.ns.svc.cluster.local\tweb\n"
                                                 "\n# Entries added by HostAliases.\n"
                                                 "127.0.0.1\tfoo.local\tbar.local\n"
                                                 "10.0.0.9\tdb\n");

        /* hostNetwork: the node's file under its own header, then the aliases. */
        {
                struct kc_volume_manager_config cfg = { .root_dir = f->root,
                                                        .node_hosts_file = at(f, "node-hosts") };
                struct kc_volume_manager *vm2 = NULL;

                nh = fopen(cfg.node_hosts_file, "we");
                assert_non_null(nh);
                fputs("127.0.0.1 localhost\n192.168.1.5 node1\n", nh);
                fclose(nh);
                assert_int_equal(kc__volume_manager_new(&cfg, &vm2), 0);
                b.pod.host_network = true;
                b.pod.n_host_aliases = 1;
                assert_int_equal(kc__make_mounts(vm2, &b.pod, &b.c, "web", NULL, ips, 1, NULL, 0,
                                                 f->a, &m, &n, &msg),
                                 0);
                kc__volume_manager_free(vm2);
        }
        host = read_all(at(f, "pods/u1/etc-hosts"));
        assert_string_equal(host, "# Kubernetes-managed hosts file (host network).\n"
                                  "127.0.0.1 localhost\n192.168.1.5 node1\n"
                                  "\n# Entries added by HostAliases.\n"
                                  "127.0.0.1\tfoo.local\tbar.local\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pod_data_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_host_path_create, setup, teardown),
                cmocka_unit_test_setup_teardown(test_host_path_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_host_path_special_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty_dir_on_disk, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty_dir_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty_dir_fs_group, setup, teardown),
                cmocka_unit_test_setup_teardown(test_api_volumes_wait, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cleanup_orphaned_pod_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cleanup_keeps_foreign_mounts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_make_mounts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sub_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_etc_hosts, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
