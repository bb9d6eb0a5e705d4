/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ListPodSandbox and ListContainers: one walk over the pods serves both.
 * A filter naming an object id (or, for containers, a sandbox id) or a
 * selector naming the pod UID narrows the walk to one pod; otherwise every
 * pod is looked at. Each kind of object brings its own filter match and
 * copy (struct sim_listing).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "../internal.h"
#include "core/arena.h"
#include "core/cleanup.h"
#include "core/list.h"
#include "core/lock.h"
#include "core/map.h"
#include "runtime/container.h"
#include "runtime/error.h"
#include "runtime/runtime_service.h"
#include "runtime/sim.h"
#include "sim_internal.h"

/*
 * Listing walks objects that are cold by now; fetch the next one of the pod
 * (its struct, a few hundred bytes) while copying this one. (Looking across
 * pods for it cost more misses on the pods than it saved.)
 */
#define PREFETCH_OBJ_BYTES 512

/* The header of an object's arena sits right before it (kc_arena_new_block()): fetched too. */
#define PREFETCH_ARENA_BYTES 128

static inline void prefetch_next(const void *next)
{
        const char *p = (const char *)next - PREFETCH_ARENA_BYTES;
        size_t k;

        for (k = 0; k < PREFETCH_ARENA_BYTES + PREFETCH_OBJ_BYTES; k += 64)
                __builtin_prefetch(p + k);
}

/* How many touched pods ahead patched_positions() fetches one. */
#define PREFETCH_PODS_AHEAD 8

/* A pod's listing positions and object lists, past its first line. */
static inline void prefetch_pod_lists(const struct sim_pod *p)
{
        __builtin_prefetch((const char *)p + offsetof(struct sim_pod, listed_at));
        __builtin_prefetch((const char *)p + offsetof(struct sim_pod, containers));
}

/* The pods a list call looks at: every pod, or only @p only (none when NULL). */
struct sim_scope {
        bool narrowed;
        struct sim_pod *only;
};

/* One kind of object a list call hands out. */
struct sim_listing {
        enum sim_op op;
        size_t pod_objects; /* offsetof(struct sim_pod, <the kind's struct sim_objects>) */
        size_t total;       /* offsetof(struct sim_state, <the kind's count in all pods>) */
        size_t item_size;   /* of one result item */
        size_t view;        /* offsetof(<the kind's object>, <its CRI view, a result item>) */
        /* The pods a filter (never NULL) lets the call look at. */
        struct sim_scope (*scope)(struct kc_sim *s, const void *filter);
        /* Whether the object whose CRI view, or a listed item of it, is @p item matches. */
        bool (*matches)(const void *item, const void *filter);
        /*
         * Whether @p filter, which narrowed the call to one pod, selects only
         * by that pod's UID label: it matches every object of the pod but
         * those unnamed (struct sim_object).
         */
        bool (*by_uid_only)(const void *filter);
        /* Whether @p filter (never NULL) lists every object of a state (*ret_state, -1: any). */
        bool (*full)(const void *filter, int *ret_state);
        /* The state of a result item. */
        int (*item_state)(const void *item);
        unsigned memo; /* its row of kc_sim.list_memo */
        /* An item of @p o; @p a (NULL: none) holds its arena. Cannot fail without @p a. */
        int (*copy)(struct kc_arena *a, const struct sim_object *o, void *item);
};

/* What a list call hands out: its items, in an arena the caller owns, and its delta. */
struct sim_list_out {
        void *items; /* NULL when none */
        size_t n;
        struct kc_arena *arena;
        const void *base; /* runtime_service.h: NULL, or the items this listing patches */
        const uint32_t *changed;
        size_t n_changed;
};

static struct sim_objects *pod_objects(const struct sim_listing *k, struct sim_pod *p)
{
        return (struct sim_objects *)((char *)p + k->pod_objects);
}

/*
 * Appends the objects of kind @p k in @p p that match @p filter to @p items
 * (room for @p cap), each object's arena held by @p hold. @p full: a listing
 * of every object, which records where the pod's objects start.
 */
static int list_pod_locked(const struct sim_listing *k, const struct sim_state *st,
                           struct sim_pod *p, const void *filter, struct kc_arena *hold, bool full,
                           char *items, size_t cap, size_t *n, struct kc_runtime_error *err)
{
        struct kc_list *head = &pod_objects(k, p)->list;
        struct sim_object *o;

        /* The next pod's struct while this one's objects are copied (its lists are in it). */
        if (p->link.next != &st->pod_list)
                __builtin_prefetch(kc_list_entry(p->link.next, struct sim_pod, link));
        if (full)
                p->listed_at[k->memo] = *n;
        kc_list_for_each_entry (o, head, struct sim_object, link) {
                if (o->link.next != head)
                        prefetch_next(kc_list_entry(o->link.next, struct sim_object, link));
                if (!k->matches((const char *)o + k->view, filter))
                        continue;
                if (*n == cap) /* the counts are maintained with the lists */
                        return kc_runtime_error_set(err, -EIO, KC_RUNTIME_INTERNAL,
                                                    "sim: object count out of sync");
                if (k->copy(hold, o, items + *n * k->item_size) < 0)
                        return kc__sim_oom(err);
                (*n)++;
        }
        return 0;
}

/* The memo slot of a full listing by @p filter (NULL: not a full listing); *ret_state its state. */
static struct sim_list_memo *memo_slot(struct kc_sim *s, const struct sim_listing *k,
                                       const void *filter, int *ret_state)
{
        int state = -1;

        if (filter && !k->full(filter, &state))
                return NULL;
        state = state < 0 ? -1 : state;
        *ret_state = state;
        return &s->list_memo[k->memo][state >= 0];
}

static void memo_clear(struct sim_list_memo *m)
{
        kc_arena_free(m->arena);
        kc_arena_free(m->keeper);
        kc_arena_free(m->spare);
        *m = (struct sim_list_memo){ 0 };
}

void kc__sim_list_memo_done(struct kc_sim *s)
{
        for (size_t i = 0; i < KC_ELEMENTSOF(s->list_memo); i++)
                for (size_t j = 0; j < KC_ELEMENTSOF(s->list_memo[i]); j++)
                        memo_clear(&s->list_memo[i][j]);
}

/*
 * How many times in a row a listing of every object is handed out again
 * (nothing changed) before its spare goes: a node that stopped changing
 * holds one listing of each kind, as it did before spares (issue 18); ten
 * relist periods.
 */
#define SPARE_IDLE_HITS 10

/*
 * A full listing, by identity (issue 18): another reference to the last one
 * of @p m's class when nothing it shows changed since. Time has moved on by
 * now (kc__sim_enter_locked): exits due before this call are in the generation.
 */
static bool memo_hit(const struct sim_state *st, struct sim_list_memo *m, int state,
                     struct sim_list_out *out)
{
        if (!m || !m->arena || m->gen != st->gen || m->state != state)
                return false;
        *out = (struct sim_list_out){ .items = m->items,
                                      .n = m->n,
                                      .arena = kc_arena_ref(m->arena) };
        if (m->spare && ++m->idle_hits >= SPARE_IDLE_HITS) {
                m->spare = kc_arena_free(m->spare);
                m->spare_changed_buf = NULL;
        }
        return true;
}

/*
 * Remembers the full listing just made, in place of the last one of its
 * class; @p keeper (NULL: none) holds its objects' arenas, @p changed_buf
 * (NULL: none) is room for @p n positions in @p a. When both are listings
 * of every object, the last one becomes the spare (the spare before goes).
 */
static void memo_keep(const struct sim_state *st, struct sim_list_memo *m, int state, void *items,
                      size_t n, struct kc_arena *a, struct kc_arena *keeper, uint32_t *changed_buf)
{
        struct sim_list_memo last;

        if (!m)
                return;
        last = *m;
        *m = (struct sim_list_memo){ .arena = kc_arena_ref(a),
                                     .items = items,
                                     .n = n,
                                     .gen = st->gen,
                                     .state = state,
                                     .keeper = kc_arena_ref(keeper),
                                     .shape = st->shape,
                                     .touch_epoch = st->touch_epoch,
                                     .changed_buf = changed_buf };
        if (keeper && last.keeper && last.arena && last.arena != a && last.n == n) {
                m->spare = TAKE_PTR(last.arena);
                m->spare_items = last.items;
                m->spare_shape = last.shape;
                m->spare_touch_epoch = last.touch_epoch;
                m->spare_changed_buf = last.changed_buf;
        }
        memo_clear(&last);
}

/*
 * Makes @p m, the memo of the listing of every object in state @p state,
 * the last listing of every object (@p any) when that one is current and
 * shows only objects in that state: the same items in the same order
 * (issue 18). On a node whose sandboxes are all ready and containers all
 * running, housekeeping's listings of those then share the relist's memory
 * instead of holding a copy of every item. A current @p m tells by its
 * count; otherwise each item's state is looked at (cheaper than the walk
 * over every object it saves).
 */
static void memo_share_full(const struct sim_state *st, const struct sim_listing *k,
                            struct sim_list_memo *m, const struct sim_list_memo *any, int state)
{
        size_t i;

        if (!any->arena || any->gen != st->gen || any->state >= 0 || m->arena == any->arena)
                return;
        if (m->arena && m->gen == st->gen && m->state == state) {
                if (m->n != any->n)
                        return;
        } else {
                for (i = 0; i < any->n; i++)
                        if (k->item_state((const char *)any->items + i * k->item_size) != state)
                                return;
        }
        memo_keep(st, m, state, any->items, any->n, any->arena, NULL, NULL);
}

/*
 * Whether @p m, the last listing of every object of kind @p k, can be
 * patched into the next: no pod or object came, went or moved since (each
 * is where it was), and every pod touched since is in the touch log.
 */
static bool memo_patchable(const struct sim_state *st, const struct sim_listing *k,
                           const struct sim_list_memo *m)
{
        return m && m->arena && m->keeper && m->state < 0 && m->shape == st->shape &&
               m->touch_epoch == st->touch_epoch &&
               m->n == *(const size_t *)((const char *)st + k->total);
}

/*
 * Checks that each of the @p n pods @p pods has its objects of kind @p k
 * within a listing of @p n_items. The pods are cold: this walk brings them
 * in for the copy that follows.
 */
static int touched_in_range(const struct sim_listing *k, struct sim_pod *const *pods, size_t n,
                            size_t n_items, struct kc_runtime_error *err)
{
        for (size_t i = 0; i < n; i++) {
                const struct sim_objects *objs = pod_objects(k, pods[i]);
                size_t at = pods[i]->listed_at[k->memo];

                if (i + PREFETCH_PODS_AHEAD < n)
                        prefetch_pod_lists(pods[i + PREFETCH_PODS_AHEAD]);
                if (objs->n > n_items || at > n_items - objs->n || n_items > UINT32_MAX)
                        return kc_runtime_error_set(err, -EIO, KC_RUNTIME_INTERNAL,
                                                    "sim: listing positions out of sync");
        }
        return 0;
}

/*
 * Which objects of kind @p k of @p p, a pod of @p st's touch log (of the
 * log before when @p prev), were touched in that log's epoch: a mask of
 * their positions in the pod (kc__sim_touch_bit()).
 */
static uint64_t touched_mask(const struct sim_listing *k, const struct sim_state *st,
                             const struct sim_pod *p, bool prev)
{
        if (prev && p->touch_epoch != st->prev_touch_epoch)
                return p->prev_touched[k->memo]; /* touched again since */
        return p->touched[k->memo];
}

/*
 * Copies the objects of kind @p k of the @p n pods @p pods, those of
 * @p st's touch log, anew into @p items, where they are: those touched.
 */
static void copy_touched(const struct sim_listing *k, const struct sim_state *st,
                         struct sim_pod *const *pods, size_t n, char *items)
{
        for (size_t i = 0; i < n; i++) {
                struct sim_objects *objs = pod_objects(k, pods[i]);
                uint64_t mask = touched_mask(k, st, pods[i], false);
                size_t at = pods[i]->listed_at[k->memo], j = 0;
                struct sim_object *o;

                /* The pods are cold by now: the one after next, and the next one's first object. */
                if (i + 2 < n)
                        __builtin_prefetch(pods[i + 2]);
                if (i + 1 < n && pod_objects(k, pods[i + 1])->n > 0)
                        prefetch_next(kc_list_entry(pod_objects(k, pods[i + 1])->list.next,
                                                    struct sim_object, link));

                kc_list_for_each_entry (o, &objs->list, struct sim_object, link) {
                        if (o->link.next != &objs->list)
                                prefetch_next(kc_list_entry(o->link.next, struct sim_object, link));
                        /* The copy holds nothing: the listing's keeper does. */
                        if (mask & kc__sim_touch_bit(j))
                                (void)k->copy(NULL, o, items + (at + j) * k->item_size);
                        j++;
                }
        }
}

/*
 * Copies the items of the objects touched of the @p n pods @p pods, those
 * of @p st's touch log before, from the listing @p from into @p to, a
 * listing of the same kind and shape (issue 18: the listing the memo has
 * is current for the pods touched before it was made, and its items were
 * read since, unlike the objects).
 */
static void copy_listed(const struct sim_listing *k, const struct sim_state *st,
                        struct sim_pod *const *pods, size_t n, const char *from, char *to)
{
        for (size_t i = 0; i < n; i++) {
                uint64_t mask = touched_mask(k, st, pods[i], true);
                size_t at = pods[i]->listed_at[k->memo], m = pod_objects(k, pods[i])->n;

                if (i + PREFETCH_PODS_AHEAD < n)
                        prefetch_pod_lists(pods[i + PREFETCH_PODS_AHEAD]);
                for (size_t j = 0; j < m; j++)
                        if (mask & kc__sim_touch_bit(j))
                                memcpy(to + (at + j) * k->item_size, from + (at + j) * k->item_size,
                                       k->item_size);
        }
}

/*
 * The delta of a listing of kind @p k patched from @p m's (runtime_service.h):
 * the positions of the objects of the pods in the touch log, in @p changed
 * (room for them all).
 */
static void touched_delta(const struct sim_listing *k, const struct sim_state *st,
                          const struct sim_list_memo *m, uint32_t *changed,
                          struct sim_list_out *out)
{
        size_t i, j, n = 0;

        for (i = 0; i < st->n_touched; i++) {
                const struct sim_objects *objs = pod_objects(k, st->touched[i]);
                uint64_t mask = touched_mask(k, st, st->touched[i], false);
                size_t at = st->touched[i]->listed_at[k->memo];

                for (j = 0; j < objs->n; j++)
                        if (mask & kc__sim_touch_bit(j))
                                changed[n++] = (uint32_t)(at + j);
        }
        out->base = m->items;
        out->changed = n > 0 ? changed : NULL;
        out->n_changed = n;
}

/*
 * The listing of every object of kind @p k as @p m patched (issue 18): its
 * items again, the objects of the pods touched since copied anew from
 * where they are, in @p a, which holds @p m's keeper: the objects are the
 * same ones. Costs a copy of the item array instead of a visit to every
 * object; @p out says where the copy differs from @p m's items, and
 * *ret_changed_buf is room for a delta's positions in @p a.
 */
static int list_patched_locked(const struct sim_listing *k, const struct sim_state *st,
                               const struct sim_list_memo *m, struct kc_arena *a,
                               struct sim_list_out *out, uint32_t **ret_changed_buf,
                               struct kc_runtime_error *err)
{
        uint32_t *changed = NULL;
        char *items = NULL;
        int r;

        r = touched_in_range(k, st->touched, st->n_touched, m->n, err);
        if (r < 0)
                return r;
        if (m->n > 0 && (!(changed = kc_arena_alloc(a, m->n * sizeof(*changed))) ||
                         !(items = kc_arena_memdup(a, m->items, m->n * k->item_size))))
                return kc__sim_oom(err);
        copy_touched(k, st, st->touched, st->n_touched, items);
        if (kc_arena_hold(a, m->keeper) < 0)
                return kc__sim_oom(err);
        touched_delta(k, st, m, changed, out);
        out->items = items;
        out->n = m->n;
        *ret_changed_buf = changed;
        return 0;
}

/*
 * Whether @p m's spare, the listing before its last one, can be patched in
 * place into the next (issue 18): only the memo holds it, nothing came,
 * went or moved since it was made (its objects are held by its keeper and
 * where it has them), and the touch logs have every pod touched since (the
 * current log, and the one before when the spare is that one's).
 */
static bool spare_patchable(const struct sim_state *st, const struct sim_list_memo *m)
{
        return m->spare && kc_arena_sole(m->spare) && m->spare_shape == st->shape &&
               (m->spare_touch_epoch == st->touch_epoch ||
                (m->spare_touch_epoch == st->prev_touch_epoch &&
                 st->prev_touch_epoch + 1 == st->touch_epoch));
}

/*
 * The listing of every object of kind @p k as @p m's spare, @p a (taken
 * from @p m), patched in place (issue 18), no item array copied: the pods
 * touched in the epoch before take their items from @p m's listing, which
 * shows them since, then the objects of the pods touched since @p m's are
 * copied anew. @p out has the delta against @p m's listing, as
 * list_patched_locked() gives it.
 */
static int list_spare_locked(const struct sim_listing *k, const struct sim_state *st,
                             const struct sim_list_memo *m, struct kc_arena *a,
                             struct sim_list_out *out, uint32_t **ret_changed_buf,
                             struct kc_runtime_error *err)
{
        bool prev = m->spare_touch_epoch != st->touch_epoch;
        uint32_t *changed = m->spare_changed_buf;
        char *items = m->spare_items;
        int r;

        r = touched_in_range(k, st->touched, st->n_touched, m->n, err);
        if (r >= 0 && prev)
                r = touched_in_range(k, st->prev_touched, st->n_prev_touched, m->n, err);
        if (r < 0)
                return r;
        if (m->n > 0 && !changed && !(changed = kc_arena_alloc(a, m->n * sizeof(*changed))))
                return kc__sim_oom(err);
        if (prev)
                copy_listed(k, st, st->prev_touched, st->n_prev_touched, m->items, items);
        copy_touched(k, st, st->touched, st->n_touched, items);
        touched_delta(k, st, m, changed, out);
        out->items = items;
        out->n = m->n;
        *ret_changed_buf = changed;
        return 0;
}

/*
 * Starts a new touch log once every listing of all objects shows the state
 * as it is now: they are patched from here on, with the pods touched after.
 */
static void touch_log_restart(struct kc_sim *s)
{
        struct sim_state *st = &s->st;
        struct sim_pod **swap_pods;
        size_t i, swap_cap;

        for (i = 0; i < KC_ELEMENTSOF(s->list_memo); i++) {
                const struct sim_list_memo *m = &s->list_memo[i][0];

                if (m->keeper && (m->gen != st->gen || m->touch_epoch != st->touch_epoch))
                        return;
        }
        /* The log so far becomes the one before: a spare of its epoch is patched with both. */
        swap_pods = st->touched;
        st->touched = st->prev_touched;
        st->prev_touched = swap_pods;
        swap_cap = st->cap_touched;
        st->cap_touched = st->cap_prev_touched;
        st->cap_prev_touched = swap_cap;
        st->n_prev_touched = st->n_touched;
        st->prev_touch_epoch = st->touch_epoch;
        st->n_touched = 0;
        st->touch_epoch++;
        for (i = 0; i < KC_ELEMENTSOF(s->list_memo); i++)
                if (s->list_memo[i][0].keeper)
                        s->list_memo[i][0].touch_epoch = st->touch_epoch;
}

/*
 * The objects of kind @p k in @p scope that match @p filter, copied into
 * @p a: *ret_items (NULL when none) and *ret_n. @p keeper (NULL: @p a
 * itself) holds their arenas; a keeper means a listing of every object.
 */
static int list_scope_locked(struct kc_sim *s, const struct sim_listing *k, const void *filter,
                             struct sim_scope scope, struct kc_arena *a, struct kc_arena *keeper,
                             char **ret_items, size_t *ret_n, struct kc_runtime_error *err)
{
        struct sim_pod *p;
        char *items = NULL;
        size_t n = 0, cap;
        int r = 0;

        /* One pass: room for every candidate, then copy the matches. */
        cap = scope.narrowed ? (scope.only ? pod_objects(k, scope.only)->n : 0)
                             : *(const size_t *)((const char *)&s->st + k->total);
        if (cap > 0) {
                items = kc_arena_alloc(a, cap * k->item_size);
                if (!items)
                        return kc__sim_oom(err);
        }
        if (scope.narrowed && scope.only) {
                r = list_pod_locked(k, &s->st, scope.only, filter, a, false, items, cap, &n, err);
        } else if (!scope.narrowed) {
                sim_for_each_pod(p, &s->st)
                {
                        r = list_pod_locked(k, &s->st, p, filter, keeper ? keeper : a,
                                            keeper != NULL, items, cap, &n, err);
                        if (r < 0)
                                break;
                }
        }
        if (r < 0)
                return r;
        if (keeper && kc_arena_hold(a, keeper) < 0)
                return kc__sim_oom(err);
        *ret_items = n > 0 ? items : NULL;
        *ret_n = n;
        return 0;
}

/*
 * One pod's objects of kind @p k that match @p filter, as the items the
 * last listing of every object of that kind has of them (issue 18): when
 * nothing changed since that listing was made, the pod's objects are its
 * items from p->listed_at on, in the order a walk of the pod gives them.
 * When all of them match, *out is those items themselves, holding that
 * listing's arena, with nothing copied (GetPodStatus lists each changed
 * pod this way right after GetPods). A filter by the pod's UID alone
 * matches them all when none is unnamed; the items are not read then,
 * as they are cold by now. Returns false, *out untouched, when the pod
 * has to be walked.
 */
static bool pod_listed(struct kc_sim *s, const struct sim_listing *k, const void *filter,
                       struct sim_pod *p, struct sim_list_out *out)
{
        const struct sim_list_memo *m = &s->list_memo[k->memo][0];
        const struct sim_objects *objs = pod_objects(k, p);
        size_t at = p->listed_at[k->memo], i;
        const char *items;

        if (!m->arena || m->gen != s->st.gen || objs->n == 0 || at > m->n || objs->n > m->n - at)
                return false;
        items = (const char *)m->items + at * k->item_size;
        if (objs->n_unnamed > 0 || !k->by_uid_only(filter))
                for (i = 0; i < objs->n; i++)
                        if (!k->matches(items + i * k->item_size, filter))
                                return false;
        *out = (struct sim_list_out){ .items = (void *)items,
                                      .n = objs->n,
                                      .arena = kc_arena_ref(m->arena) };
        return true;
}

/*
 * A list call for objects of kind @p k: enters the call (@p key names the
 * object for faults and latency), then copies the objects in the filter's
 * scope that match it into a new arena, which *out hands to the caller
 * (untouched on failure). A listing of every object is the last one again
 * when nothing changed, or that one patched (then *out has its delta).
 */
static int list_call(struct kc_sim *s, const struct sim_listing *k, const void *filter,
                     const char *key, struct sim_list_out *out, struct kc_runtime_error *err)
{
        KC_LOCK_GUARD(&s->lock);
        _cleanup_(kc_arena_freep) struct kc_arena *a = NULL, *keeper = NULL;
        struct sim_list_out res = { 0 };
        struct sim_list_memo *memo;
        struct sim_scope scope;
        uint32_t *changed_buf = NULL;
        char *items = NULL;
        int r, state = -1;

        r = kc__sim_enter_locked(s, k->op, key, err);
        if (r < 0)
                return r;
        memo = memo_slot(s, k, filter, &state);
        if (memo && state >= 0)
                memo_share_full(&s->st, k, memo, &s->list_memo[k->memo][0], state);
        if (memo_hit(&s->st, memo, state, out))
                return 0;
        scope = filter ? k->scope(s, filter) : (struct sim_scope){ .narrowed = false };
        if (scope.only) {
                kc__sim_remember_pod(s, scope.only);
                if (pod_listed(s, k, filter, scope.only, out))
                        return 0;
        }
        if (memo_patchable(&s->st, k, memo)) {
                if (spare_patchable(&s->st, memo)) {
                        /* The memo's reference to its spare is the result's now. */
                        a = TAKE_PTR(memo->spare);
                        r = list_spare_locked(k, &s->st, memo, a, &res, &changed_buf, err);
                        s->listings_recycled++;
                } else {
                        if (kc_arena_new(&a) < 0)
                                return kc__sim_oom(err);
                        r = list_patched_locked(k, &s->st, memo, a, &res, &changed_buf, err);
                }
                s->listings_patched++;
                keeper = kc_arena_ref(memo->keeper);
        } else {
                if (kc_arena_new(&a) < 0)
                        return kc__sim_oom(err);
                /* Every object of any state: their arenas held once, by a keeper of their own. */
                if (memo && state < 0 && kc_arena_new(&keeper) < 0)
                        return kc__sim_oom(err);
                r = list_scope_locked(s, k, filter, scope, a, keeper, &items, &res.n, err);
                res.items = items;
        }
        if (r < 0)
                return r;
        memo_keep(&s->st, memo, state, res.items, res.n, a, keeper, changed_buf);
        if (keeper)
                touch_log_restart(s);
        res.arena = TAKE_PTR(a);
        *out = res;
        return 0;
}

uint64_t kc__sim_listings_patched(struct kc_sim *s)
{
        KC_LOCK_GUARD(&s->lock);
        return s->listings_patched;
}

uint64_t kc__sim_listings_recycled(struct kc_sim *s)
{
        KC_LOCK_GUARD(&s->lock);
        return s->listings_recycled;
}

/* The scope of a filter naming the object @p o (NULL: no such object). */
static struct sim_scope scope_of(const struct sim_object *o)
{
        return (struct sim_scope){ .narrowed = true, .only = o ? o->pod : NULL };
}

/*
 * Pods whose objects may match a selector: one pod when it names the pod
 * UID. GetPodStatus lists a pod's sandboxes, then its containers: the pod
 * the call before narrowed to is looked at first, while nothing changed
 * since (then it is alive, cri_face.c's listed_object()).
 */
static struct sim_scope selector_scope(struct kc_sim *s, const struct kc_label *sel, size_t n)
{
        const char *uid = kc__label_get(sel, n, KC_LABEL_POD_UID);
        struct sim_pod *last = kc__sim_remembered_pod(s);

        if (!uid)
                return (struct sim_scope){ .narrowed = false };
        if (last && strcmp(last->uid, uid) == 0)
                return (struct sim_scope){ .narrowed = true, .only = last };
        return (struct sim_scope){ .narrowed = true, .only = kc_map_get(s->st.pods, uid) };
}

/* ------------------------------------------------------------------------ */
/* ListPodSandbox                                                             */

static const struct sim_sandbox *as_sandbox(const struct sim_object *o)
{
        return kc_container_of(o, struct sim_sandbox, o);
}

static bool sandbox_matches(const void *item, const void *filter)
{
        const struct kc_pod_sandbox_filter *f = filter;
        const struct kc_pod_sandbox *v = item;

        if (!f)
                return true;
        if (f->id && strcmp(f->id, v->id) != 0)
                return false;
        if (f->state >= 0 && (int)v->state != f->state)
                return false;
        return kc__labels_match(v->labels, v->n_labels, f->label_selector, f->n_label_selector);
}

static bool sandbox_by_uid_only(const void *filter)
{
        const struct kc_pod_sandbox_filter *f = filter;

        return !f->id && f->state < 0 && f->n_label_selector == 1;
}

static int sandbox_copy(struct kc_arena *a, const struct sim_object *o, void *item)
{
        return kc__sim_sandbox_copy_listed(a, as_sandbox(o), item);
}

static struct sim_scope sandbox_scope(struct kc_sim *s, const void *filter)
{
        const struct kc_pod_sandbox_filter *f = filter;
        struct sim_sandbox *sb;

        if (f->id) {
                sb = kc_map_get(s->st.sandboxes, f->id);
                return scope_of(sb ? &sb->o : NULL);
        }
        return selector_scope(s, f->label_selector, f->n_label_selector);
}

static bool sandbox_full(const void *filter, int *ret_state)
{
        const struct kc_pod_sandbox_filter *f = filter;

        *ret_state = f->state;
        return !f->id && f->n_label_selector == 0;
}

static int sandbox_item_state(const void *item)
{
        return (int)((const struct kc_pod_sandbox *)item)->state;
}

static const struct sim_listing sandbox_listing = {
        .op = SIM_OP_LIST_POD_SANDBOX,
        .pod_objects = offsetof(struct sim_pod, sandboxes),
        .total = offsetof(struct sim_state, n_sandboxes),
        .item_size = sizeof(struct kc_pod_sandbox),
        .view = offsetof(struct sim_sandbox, v),
        .scope = sandbox_scope,
        .matches = sandbox_matches,
        .by_uid_only = sandbox_by_uid_only,
        .full = sandbox_full,
        .item_state = sandbox_item_state,
        .memo = 0,
        .copy = sandbox_copy,
};

int kc__sim_list_pod_sandbox(void *self, const struct kc_pod_sandbox_filter *filter,
                             struct kc_pod_sandbox_list *ret, struct kc_runtime_error *err)
{
        struct sim_list_out out;
        int r;

        r = list_call(self, &sandbox_listing, filter, filter ? filter->id : NULL, &out, err);
        if (r < 0)
                return r;
        *ret = (struct kc_pod_sandbox_list){ .items = out.items,
                                             .n = out.n,
                                             .arena = out.arena,
                                             .base = out.base,
                                             .changed = out.changed,
                                             .n_changed = out.n_changed };
        return 0;
}

/* ------------------------------------------------------------------------ */
/* ListContainers                                                             */

static const struct sim_container *as_container(const struct sim_object *o)
{
        return kc_container_of(o, struct sim_container, o);
}

static bool container_matches(const void *item, const void *filter)
{
        const struct kc_container_filter *f = filter;
        const struct kc_cri_container *v = item;

        if (!f)
                return true;
        if (f->id && strcmp(f->id, v->id) != 0)
                return false;
        if (f->pod_sandbox_id && !kc__streq(f->pod_sandbox_id, v->pod_sandbox_id))
                return false;
        if (f->state >= 0 && (int)v->state != f->state)
                return false;
        return kc__labels_match(v->labels, v->n_labels, f->label_selector, f->n_label_selector);
}

static bool container_by_uid_only(const void *filter)
{
        const struct kc_container_filter *f = filter;

        return !f->id && !f->pod_sandbox_id && f->state < 0 && f->n_label_selector == 1;
}

static int container_copy(struct kc_arena *a, const struct sim_object *o, void *item)
{
        return kc__sim_container_copy_listed(a, as_container(o), item);
}

static struct sim_scope container_scope(struct kc_sim *s, const void *filter)
{
        const struct kc_container_filter *f = filter;
        struct sim_container *c;
        struct sim_sandbox *sb;

        if (f->id) {
                c = kc_map_get(s->st.containers, f->id);
                return scope_of(c ? &c->o : NULL);
        }
        if (f->pod_sandbox_id) {
                sb = kc_map_get(s->st.sandboxes, f->pod_sandbox_id);
                return scope_of(sb ? &sb->o : NULL);
        }
        return selector_scope(s, f->label_selector, f->n_label_selector);
}

static bool container_full(const void *filter, int *ret_state)
{
        const struct kc_container_filter *f = filter;

        *ret_state = f->state;
        return !f->id && !f->pod_sandbox_id && f->n_label_selector == 0;
}

static int container_item_state(const void *item)
{
        return (int)((const struct kc_cri_container *)item)->state;
}

static const struct sim_listing container_listing = {
        .op = SIM_OP_LIST_CONTAINERS,
        .pod_objects = offsetof(struct sim_pod, containers),
        .total = offsetof(struct sim_state, n_containers),
        .item_size = sizeof(struct kc_cri_container),
        .view = offsetof(struct sim_container, v),
        .scope = container_scope,
        .matches = container_matches,
        .by_uid_only = container_by_uid_only,
        .full = container_full,
        .item_state = container_item_state,
        .memo = 1,
        .copy = container_copy,
};

int kc__sim_list_containers(void *self, const struct kc_container_filter *filter,
                            struct kc_container_list *ret, struct kc_runtime_error *err)
{
        struct sim_list_out out;
        int r;

        r = list_call(self, &container_listing, filter, filter ? filter->id : NULL, &out, err);
        if (r < 0)
                return r;
        *ret = (struct kc_container_list){ .items = out.items,
                                           .n = out.n,
                                           .arena = out.arena,
                                           .base = out.base,
                                           .changed = out.changed,
                                           .n_changed = out.n_changed };
        return 0;
}
