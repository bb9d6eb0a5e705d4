/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file core/list.h
 * @brief An intrusive, circular, doubly linked list with a sentinel head.
 *
 * Embed a struct kc_list in each element and one as the head; an element
 * is on at most one list per embedded member. Every operation is O(1) and
 * never allocates. Not thread-safe: callers hold whatever lock guards the
 * list. An unlinked element points at itself, so kc_list_linked() tells
 * whether it is on a list and kc_list_del() is idempotent.
 *
 *     struct item { int v; struct kc_list link; };
 *     struct kc_list head = KC_LIST_HEAD_INIT(head);
 *     kc_list_add_tail(&head, &it->link);
 *     kc_list_for_each_entry(pos, &head, struct item, link) ...
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct kc_list {
        struct kc_list *prev, *next;
};

/** A static initializer for a head (or unlinked element) named @p name. */
#define KC_LIST_HEAD_INIT(name)                                                                    \
        {                                                                                          \
                &(name), &(name)                                                                   \
        }

/** The struct of type @p type whose member @p member is at @p ptr. */
#define kc_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define kc_list_entry(ptr, type, member) kc_container_of(ptr, type, member)

static inline void kc_list_init(struct kc_list *l)
{
        l->prev = l->next = l;
}

static inline bool kc_list_empty(const struct kc_list *head)
{
        return head->next == head;
}

/** True when @p node is on a list (it was added and not deleted since). */
static inline bool kc_list_linked(const struct kc_list *node)
{
        return node->next != node;
}

static inline void kc__list_insert(struct kc_list *node, struct kc_list *prev, struct kc_list *next)
{
        node->prev = prev;
        node->next = next;
        prev->next = node;
        next->prev = node;
}

/** Adds @p node at the front of @p head. @p node must not be linked. */
static inline void kc_list_add_head(struct kc_list *head, struct kc_list *node)
{
        kc__list_insert(node, head, head->next);
}

/** Adds @p node at the back of @p head. @p node must not be linked. */
static inline void kc_list_add_tail(struct kc_list *head, struct kc_list *node)
{
        kc__list_insert(node, head->prev, head);
}

/** Unlinks @p node from its list (a no-op when it is not linked). */
static inline void kc_list_del(struct kc_list *node)
{
        node->prev->next = node->next;
        node->next->prev = node->prev;
        kc_list_init(node);
}

/** The first node of @p head, or NULL when it is empty. */
static inline struct kc_list *kc_list_first(const struct kc_list *head)
{
        return kc_list_empty(head) ? NULL : head->next;
}

/** The last node of @p head, or NULL when it is empty. */
static inline struct kc_list *kc_list_last(const struct kc_list *head)
{
        return kc_list_empty(head) ? NULL : head->prev;
}

/** Walks the elements of @p head front to back; do not unlink @p pos inside. */
#define kc_list_for_each_entry(pos, head, type, member)                                            \
        for (pos = kc_list_entry((head)->next, type, member); &pos->member != (head);              \
             pos = kc_list_entry(pos->member.next, type, member))

/** As kc_list_for_each_entry(), but @p pos may be unlinked (or freed) inside. */
#define kc_list_for_each_entry_safe(pos, tmp, head, type, member)                                  \
        for (pos = kc_list_entry((head)->next, type, member),                                      \
            tmp = kc_list_entry(pos->member.next, type, member);                                   \
             &pos->member != (head);                                                               \
             pos = tmp, tmp = kc_list_entry(tmp->member.next, type, member))
