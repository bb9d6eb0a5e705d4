/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's mounts (volume_manager.h kc__make_mounts): upstream
 * kubelet_pods.go makeMounts, translateMountPropagation, makeHostsMount,
 * ensureHostsFile, managedHostsFileContent, nodeHostsFileContent and
 * hostsEntriesFromHostAliases; kubecontainer.ExpandContainerVolumeMounts
 * for subPathExpr. Issue 14.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/log.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "volume_manager.h"

#define ETC_HOSTS_PATH "/etc/hosts"
#define HOSTS_FILE_MODE 0644

/* Sets *ret_msg to a formatted message and returns @p r. */
__attribute__((format(printf, 3, 4))) static int fail(char **ret_msg, int r, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_msg, fmt, ap) < 0)
                *ret_msg = NULL;
        va_end(ap);
        return r;
}

/* hostsEntriesFromHostAliases. */
static void write_host_aliases(FILE *f, const struct kc_api_pod *pod)
{
        if (pod->n_host_aliases == 0)
                return;
        fputs("\n# Entries added by HostAliases.\n", f);
        for (size_t i = 0; i < pod->n_host_aliases; i++) {
                const struct kc_api_host_alias *h = &pod->host_aliases[i];

                fputs(h->ip ? h->ip : "", f);
                for (size_t j = 0; j < h->n_hostnames; j++)
                        fprintf(f, "%s%s", j ? "\t" : "\t", h->hostnames[j]);
                fputc('\n', f);
        }
}

/* nodeHostsFileContent: the node's file after the host-network header. */
static int write_node_hosts(FILE *f, const char *node_hosts, char **ret_msg)
{
        char buf[4096];
        size_t n;
        FILE *in = fopen(node_hosts, "re");

        if (!in)
                return fail(ret_msg, -errno, "open %s: %s", node_hosts, strerror(errno));
        fputs("# Kubernetes-managed hosts file (host network).\n", f);
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
                fwrite(buf, 1, n, f);
        fclose(in);
        return 0;
}

/* managedHostsFileContent. */
static void write_managed_hosts(FILE *f, const char *hostname, const char *domain,
                                const char *const *ips, size_t n_ips)
{
        fputs("# Kubernetes-managed hosts file.\n"
              "127.0.0.1\tlocalhost\n"
              "::1\tlocalhost ip6-localhost ip6-loopback\n"
              "fe00::0\tip6-localnet\n"
              "fe00::0\tip6-mcastprefix\n"
              "fe00::1\tip6-allnodes\n"
              "fe00::2\tip6-allrouters\n",
              f);
        for (size_t i = 0; i < n_ips; i++) {
                if (domain && *domain)
                        fprintf(f, "%s\t%s.%s\t%s\n", ips[i], hostname, domain, hostname);
                else
                        fprintf(f, "%s\t%s\n", ips[i], hostname);
        }
}

/* ensureHostsFile: writes @p path (0644) through a temporary file. */
static int ensure_hosts_file(const struct kc_volume_manager *vm, const char *path,
                             const struct kc_api_pod *pod, const char *hostname, const char *domain,
                             const char *const *ips, size_t n_ips, char **ret_msg)
{
        _cleanup_free_ char *buf = NULL, *tmp = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        int fd, r = 0;

        if (!f)
                return -ENOMEM;
        if (pod->host_network)
                r = write_node_hosts(f, kc__volume_manager_node_hosts_file(vm), ret_msg);
        else
                write_managed_hosts(f, hostname ? hostname : pod->name, domain, ips, n_ips);
        write_host_aliases(f, pod);
        if (fclose(f) != 0)
                return -ENOMEM;
        if (r < 0)
                return r;
        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, HOSTS_FILE_MODE);
        if (fd < 0)
                return fail(ret_msg, -errno, "open %s: %s", tmp, strerror(errno));
        if ((size_t)write(fd, buf, len) != len || fchmod(fd, HOSTS_FILE_MODE) < 0) {
                r = errno ? -errno : -EIO;
                close(fd);
                unlink(tmp);
                return fail(ret_msg, r, "write %s: %s", tmp, strerror(-r));
        }
        close(fd);
        if (rename(tmp, path) < 0) {
                r = -errno;
                unlink(tmp);
                return fail(ret_msg, r, "rename %s: %s", path, strerror(-r));
        }
        return 0;
}

/*
 * ExpandContainerVolumeMounts: $(VAR) from the container's environment, "$$"
 * is a literal "$"; a variable that is missing or empty is an error.
 */
static int expand_sub_path_expr(const char *expr, const struct kc_label *envs, size_t n_envs,
                                struct kc_arena *a, const char **ret, char **ret_msg)
{
        _cleanup_free_ char *buf = NULL, *missing = NULL;
        size_t len = 0, mlen = 0;
        FILE *f = open_memstream(&buf, &len), *m = open_memstream(&missing, &mlen);

        if (!f || !m) {
                if (f)
                        fclose(f);
                if (m)
                        fclose(m);
                return -ENOMEM;
        }
        for (const char *p = expr; *p; p++) {
                const char *end;
                size_t i, n;

                if (p[0] != '$' || (p[1] != '(' && p[1] != '$')) {
                        fputc(*p, f);
                        continue;
                }
                if (p[1] == '$' || !(end = strchr(p + 2, ')'))) {
                        /* "$$" escapes; "$(" without ")" stays as written. */
                        fputc('$', f);
                        p += p[1] == '$';
                        continue;
                }
                n = (size_t)(end - (p + 2));
                for (i = 0; i < n_envs; i++)
                        if (strlen(envs[i].key) == n && strncmp(envs[i].key, p + 2, n) == 0)
                                break;
                if (i < n_envs && envs[i].value && *envs[i].value)
                        fputs(envs[i].value, f);
                else
                        fprintf(m, "%s%.*s", ftell(m) ? ", " : "", (int)n, p + 2);
                p = end;
        }
        if (fclose(f) != 0 || fclose(m) != 0)
                return -ENOMEM;
        if (mlen)
                return fail(ret_msg, -EINVAL, "missing value for %s", missing);
        *ret = kc_arena_strdup(a, buf);
        return *ret ? 0 : -ENOMEM;
}

/*
 * SafeMakeDir, simplified: creates each missing component of @p sub below
 * @p vol_fd with @p mode, refusing to go through a symlink.
 */
static int safe_make_dir(int vol_fd, const char *sub, mode_t mode)
{
        _cleanup_free_ char *copy = strdup(sub);
        _cleanup_close_ int fd = -1;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        fd = dup(vol_fd);
        if (fd < 0)
                return -errno;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int next;

                if (strcmp(c, ".") == 0)
                        continue;
                bool made = mkdirat(fd, c, mode) == 0;

                if (!made && errno != EEXIST)
                        return -errno;
                next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                close(fd);
                fd = next;
                /* The volume's mode as is, not narrowed by the umask. */
                if (made && fchmod(fd, mode) < 0)
                        return -errno;
        }
        return 0;
}

/* Whether the real path of @p p lies within the real path @p root. */
static bool within(const char *root, const char *p)
{
        _cleanup_free_ char *rp = realpath(p, NULL);
        size_t n = strlen(root);

        return rp && strncmp(rp, root, n) == 0 && (rp[n] == '\0' || rp[n] == '/' || n == 1);
}

/*
 * The subPath part of makeMounts: refuses absolute paths and "..", creates
 * the directory when missing (with the volume's mode, never through a
 * symlink), and refuses a subPath whose real path leaves the volume (D43:
 * checked, not bind-mounted as PrepareSafeSubpath does).
 */
static int prepare_sub_path(const char *vol_path, const char *sub, const char *mount_name,
                            const char *container, struct kc_arena *a, const char **ret,
                            char **ret_msg)
{
        _cleanup_free_ char *path = NULL, *root = NULL;
        _cleanup_close_ int vol_fd = -1;
        struct stat st;

        if (sub[0] == '/')
                return fail(ret_msg, -EINVAL, "error SubPath `%s` must not be an absolute path",
                            sub);
        for (const char *p = sub; *p;) {
                size_t n = strcspn(p, "/");

                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return fail(ret_msg, -EINVAL,
                                    "unable to provision SubPath `%s`: must not contain '..'", sub);
                p += n + (p[n] == '/');
        }
        if (asprintf(&path, "%s/%s", vol_path, sub) < 0)
                return -ENOMEM;
        if (lstat(path, &st) < 0) {
                int r = -ENOENT;

                vol_fd = open(vol_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (vol_fd < 0 || fstat(vol_fd, &st) < 0 ||
                    (r = safe_make_dir(vol_fd, sub, st.st_mode & 07777)) < 0) {
                        kc_log_errno_s(vol_fd < 0 ? -errno : r,
                                       "Failed to create subPath directory for volumeMount of "
                                       "the container",
                                       KC_KV_STR("containerName", container),
                                       KC_KV_STR("volumeMountName", mount_name));
                        return fail(ret_msg, -EIO,
                                    "failed to create subPath directory for volumeMount \"%s\" of "
                                    "container \"%s\"",
                                    mount_name, container);
                }
        }
        root = realpath(vol_path, NULL);
        if (!root || !within(root, path)) {
                kc_log_error_s("the subPath resolves outside its volume",
                               "Failed to prepare subPath for volumeMount of the container",
                               KC_KV_STR("containerName", container),
                               KC_KV_STR("volumeMountName", mount_name));
                return fail(ret_msg, -EPERM,
                            "failed to prepare subPath for volumeMount \"%s\" of container \"%s\"",
                            mount_name, container);
        }
        *ret = kc_arena_strdup(a, path);
        return *ret ? 0 : -ENOMEM;
}

/* The host path of a set-up volume, in @p a; -ENOENT when the volume is unknown or has none. */
static int volume_host_path(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                            const char *name, struct kc_arena *a, const char **ret)
{
        _cleanup_free_ char *dir = NULL, *p = NULL;

        for (size_t i = 0; i < pod->n_volumes; i++) {
                const struct kc_api_volume *v = &pod->volumes[i];

                if (strcmp(v->name, name) != 0)
                        continue;
                if (v->kind == KC_VOLUME_HOST_PATH)
                        *ret = kc_arena_strdup(a, v->host_path);
                else if (v->kind == KC_VOLUME_EMPTY_DIR &&
                         kc__volume_manager_pod_dir(vm, pod->uid, &dir) >= 0 &&
                         asprintf(&p, "%s/volumes/" KC_EMPTY_DIR_PLUGIN_DIR "/%s", dir, name) >= 0)
                        *ret = kc_arena_strdup(a, p);
                else
                        return -ENOENT;
                return *ret ? 0 : -ENOMEM;
        }
        return -ENOENT;
}

/* translateMountPropagation; Bidirectional only for privileged containers (API validation). */
static int propagation(const struct kc_api_container *c, const struct kc_api_volume_mount *m,
                       enum kc_cri_propagation *ret, char **ret_msg)
{
        switch (m->propagation) {
        case KC_MOUNT_PROPAGATION_UNSET:
        case KC_MOUNT_PROPAGATION_NONE:
                *ret = KC_CRI_PROPAGATION_PRIVATE;
                return 0;
        case KC_MOUNT_PROPAGATION_HOST_TO_CONTAINER:
                *ret = KC_CRI_PROPAGATION_HOST_TO_CONTAINER;
                return 0;
        case KC_MOUNT_PROPAGATION_BIDIRECTIONAL:
                if (kc_api_security_context_of(c)->privileged != KC_OPT_TRUE)
                        return fail(ret_msg, -EPERM,
                                    "Bidirectional mount propagation is available only to "
                                    "privileged containers");
                *ret = KC_CRI_PROPAGATION_BIDIRECTIONAL;
                return 0;
        default:
                return fail(ret_msg, -EINVAL, "invalid MountPropagation mode: %d",
                            (int)m->propagation);
        }
}

/* One volumeMount of makeMounts. */
static int make_mount(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                      const struct kc_api_container *c, const struct kc_api_volume_mount *m,
                      const struct kc_label *envs, size_t n_envs, struct kc_arena *a,
                      struct kc_cri_mount *ret, char **ret_msg)
{
        const char *host = NULL, *sub = m->sub_path;
        struct kc_cri_mount out = { .readonly = m->read_only };
        int r;

        if (volume_host_path(vm, pod, m->name, a, &host) < 0) {
                kc_log_error_s(NULL,
                               "Mount cannot be satisfied for the container, because the volume "
                               "is missing or the volume mounter (vol.Mounter) is nil",
                               KC_KV_STR("containerName", c->name),
                               KC_KV_STR("volumeMountName", m->name));
                return fail(ret_msg, -ENOENT,
                            "cannot find volume \"%s\" to mount into container "
                            "\"%s\"",
                            m->name, c->name);
        }
        if (m->sub_path_expr && *m->sub_path_expr) {
                r = expand_sub_path_expr(m->sub_path_expr, envs, n_envs, a, &sub, ret_msg);
                if (r < 0)
                        return r;
        }
        if (sub && *sub &&
            (r = prepare_sub_path(host, sub, m->name, c->name, a, &host, ret_msg)) < 0)
                return r;
        if ((r = propagation(c, m, &out.propagation, ret_msg)) < 0)
                return r;
        out.host_path = host;
        if (m->mount_path && m->mount_path[0] == '/')
                out.container_path = kc_arena_strdup(a, m->mount_path);
        else if (asprintf((char **)&out.container_path, "/%s",
                          m->mount_path ? m->mount_path : "") >= 0) {
                char *p = (char *)out.container_path;

                out.container_path = kc_arena_strdup(a, p);
                free(p);
        }
        if (!out.container_path)
                return -ENOMEM;
        *ret = out;
        return 0;
}

int kc__make_mounts(const struct kc_volume_manager *vm, const struct kc_api_pod *pod,
                    const struct kc_api_container *c, const char *hostname, const char *domain,
                    const char *const *pod_ips, size_t n_pod_ips, const struct kc_label *envs,
                    size_t n_envs, struct kc_arena *a, const struct kc_cri_mount **ret,
                    size_t *ret_n, char **ret_msg)
{
        struct kc_cri_mount *mounts;
        bool etc_hosts = n_pod_ips > 0;
        size_t n = 0;
        int r;

        mounts = kc_arena_alloc(a, (c->n_volume_mounts + 1) * sizeof(*mounts));
        if (!mounts)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_volume_mounts; i++) {
                const struct kc_api_volume_mount *m = &c->volume_mounts[i];

                if (m->mount_path && strcmp(m->mount_path, ETC_HOSTS_PATH) == 0)
                        etc_hosts = false;
                r = make_mount(vm, pod, c, m, envs, n_envs, a, &mounts[n], ret_msg);
                if (r < 0)
                        return r;
                n++;
        }
        if (etc_hosts) {
                _cleanup_free_ char *dir = NULL, *path = NULL;

                if ((r = kc__volume_manager_pod_dir(vm, pod->uid, &dir)) < 0)
                        return r;
                if (asprintf(&path, "%s/etc-hosts", dir) < 0)
                        return -ENOMEM;
                r = ensure_hosts_file(vm, path, pod, hostname, domain, pod_ips, n_pod_ips, ret_msg);
                if (r < 0)
                        return r;
                mounts[n++] = (struct kc_cri_mount){
                        .container_path = ETC_HOSTS_PATH,
                        .host_path = kc_arena_strdup(a, path),
                        .selinux_relabel = true,
                };
                if (!mounts[n - 1].host_path)
                        return -ENOMEM;
        }
        *ret = mounts;
        *ret_n = n;
        return 0;
}
